package engine

// order links the slots of a table (the totals table, an lru) from the
// most recently used to the least, by slot index: a doubly linked list
// that allocates nothing per entry.
type order struct {
	links          []link // by slot
	newest, oldest int32  // -1 when empty
}

type link struct {
	newer, older int32 // -1: none
}

func newOrder(slots int) order {
	return order{links: make([]link, slots), newest: -1, oldest: -1}
}

// touch makes slot s, linked, the most recently used: unlink and
// linkNewest in one, knowing what a slot that is not the newest has (a
// newer one; a newest one), with one bounds check per link written. Every
// record touches two to four slots.
func (o *order) touch(s int32) {
	newest := o.newest
	if s == newest {
		return
	}
	links := o.links
	l := &links[s]
	newer, older := l.newer, l.older
	links[newer].older = older
	if older >= 0 {
		links[older].newer = newer
	} else {
		o.oldest = newer
	}
	*l = link{newer: -1, older: newest}
	links[newest].newer = s
	o.newest = s
}

func (o *order) unlink(s int32) {
	l := o.links[s]
	if l.newer >= 0 {
		o.links[l.newer].older = l.older
	} else {
		o.newest = l.older
	}
	if l.older >= 0 {
		o.links[l.older].newer = l.newer
	} else {
		o.oldest = l.newer
	}
}

func (o *order) linkNewest(s int32) {
	o.links[s] = link{newer: -1, older: o.newest}
	if o.newest >= 0 {
		o.links[o.newest].newer = s
	} else {
		o.oldest = s
	}
	o.newest = s
}
