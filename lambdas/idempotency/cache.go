package idempotency

import (
	"container/list"
	"sync"
	"time"
)

// lru is a bounded cache of COMPLETADO records. Completed records are
// immutable until they expire, so serving them from memory is safe; a
// cached entry is dropped at its record's expira_en.
type lru struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = most recently used
	items map[string]*list.Element
}

type cacheEntry struct {
	key     string
	rec     record
	expires time.Time
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: make(map[string]*list.Element, max)}
}

func (c *lru) get(key string, now time.Time) (record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return record{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.expires) {
		c.order.Remove(el)
		delete(c.items, key)
		return record{}, false
	}
	c.order.MoveToFront(el)
	return e.rec, true
}

func (c *lru) put(key string, rec record) {
	if rec.status != StatusCompleted {
		return // never cache a lock or a failure
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value = &cacheEntry{key: key, rec: rec, expires: rec.expiresAt}
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, rec: rec, expires: rec.expiresAt})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}
