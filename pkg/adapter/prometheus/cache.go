package prometheus

import "time"

type cachedResult struct {
	at time.Time
	r  *queryResult
}

// result returns query's answer for namespace (cache key key) from the
// cache, or runs it.
func (s *Source) result(key, query, namespace string) (*queryResult, error) {
	now := s.opts.Now()
	s.mu.Lock()
	c, ok := s.cache[key]
	s.mu.Unlock()
	if ok && s.opts.CacheTTL > 0 && now.Sub(c.at) < s.opts.CacheTTL {
		return c.r, nil
	}
	v, err, _ := s.flight.Do(key, func() (any, error) {
		r, err := s.run(query, namespace)
		if err != nil {
			return nil, err
		}
		if s.opts.CacheTTL > 0 {
			s.store(key, r)
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*queryResult), nil
}

// maxCacheEntries bounds the cache before expired entries are swept: keys
// are per namespace, and any namespace a client names makes one.
const maxCacheEntries = 256

// store caches r under key, first dropping expired entries when the cache
// has grown.
func (s *Source) store(key string, r *queryResult) {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cache) >= maxCacheEntries {
		for k, c := range s.cache {
			if now.Sub(c.at) >= s.opts.CacheTTL {
				delete(s.cache, k)
			}
		}
	}
	s.cache[key] = cachedResult{at: now, r: r}
}
