// watch: a response body that produces the watch stream as it is read.
// No goroutine serves a watch: the client's reading goroutine waits, in
// Read, on channels and timers only (the store's change channel, the
// request context, Close, the watch's timeout, bookmark and expiry
// timers), so inside a synctest bubble it is durably blocked, and a
// cancelled or closed watch leaves nothing running.

package apimodel

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

func (c *call) watch() response {
	opts, sel, err := c.listOptions()
	if err != nil {
		return errorResponse(err)
	}
	timeout := DefaultWatchTimeout
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	// Bookmarks come from the watch cache, which kube-apiserver never has
	// for Events unless told (EventsWatchCache).
	cached := c.rt.store != storeEvents || c.s.opts.EventsWatchCache
	w := &watchBody{
		s: c.s, rt: c.rt, sel: sel, ctx: c.req.Context(), closed: make(chan struct{}),
		bookmarks: opts.AllowWatchBookmarks, timeout: time.NewTimer(timeout), expiry: stoppedTimer(),
	}
	w.deadline = c.s.opts.Now().Add(timeout)
	c.s.mu.Lock()
	c.s.maintainLocked()
	w.end = c.s.endWatch
	err = w.startLocked(opts, cached)
	c.s.mu.Unlock()
	if err != nil {
		w.timeout.Stop()
		return errorResponse(err)
	}
	w.bookmark = stoppedTimer()
	if w.bookmarks && cached {
		w.bookmark.Reset(w.nextBookmark(c.s.opts.Now()))
	}
	return response{code: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}}, stream: w}
}

// watchBody is a watch's response body.
type watchBody struct {
	s         *Server
	rt        *resourceType
	sel       selection
	ctx       context.Context
	cursor    int64  // revisions up to here are sent (or not for this watch)
	start     int64  // the revision the watch started from
	buf       []byte // encoded events not yet read
	ended     bool   // the stream ends once buf is read
	bookmarks bool
	due       bool        // a bookmark is due once the events are out
	deadline  time.Time   // the watch's timeout, on the model's clock
	timeout   *time.Timer // fires at deadline
	bookmark  *time.Timer // the next bookmark (stopped without bookmarks)
	expiry    *time.Timer // the next Event TTL
	end       chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

// startLocked places the watch's cursor: resourceVersion "" or "0" starts
// with the current objects (ADDED), N after revision N (an ERROR 410 when
// N is compacted away).
func (w *watchBody) startLocked(opts metav1.ListOptions, cached bool) error {
	st := w.s.st
	initial := opts.ResourceVersion == "" || opts.ResourceVersion == "0" || opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
		w.cursor = st.rv
	} else {
		rv, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
		if err != nil || rv <= 0 {
			return apierrors.NewBadRequest("invalid resource version: " + opts.ResourceVersion)
		}
		if rv > st.rv && cached {
			return tooLargeResourceVersion(rv, st.rv) // a watch cache's answer (after a wait)
		} // etcd's watch waits for the revision
		if rv+1 < st.compacted {
			w.buf = frame(watch.Error, statusObject(apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.")))
			w.ended = true
			return nil
		}
		w.cursor = rv
	}
	if initial {
		for _, o := range st.snapshot(w.rt.store, w.cursor, w.sel.keeps) {
			w.buf = append(w.buf, frame(watch.Added, w.versioned(o))...)
		}
	}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents && w.bookmarks {
		w.buf = append(w.buf, w.bookmarkFrame(w.cursor, true)...)
	}
	w.start = w.cursor
	return nil
}

// Read produces the stream: what is buffered, else the next events, a
// bookmark, or the end.
func (w *watchBody) Read(p []byte) (int, error) {
	for len(w.buf) == 0 {
		if w.ended {
			return 0, io.EOF
		}
		if err := w.wait(); err != nil {
			return 0, err
		}
	}
	n := copy(p, w.buf)
	w.buf = w.buf[n:]
	return n, nil
}

// wait fills buf, or waits for something to happen.
func (w *watchBody) wait() error {
	s := w.s
	s.mu.Lock()
	s.maintainLocked()
	w.collectLocked()
	changed, next := s.st.changed, s.st.nextDeadline()
	if len(w.buf) == 0 && w.due {
		// The watch cache's bookmark: the resource's last write, sent
		// only when newer than where the watch started.
		if last := s.st.last[w.rt.store]; last > w.start {
			w.buf = w.bookmarkFrame(last, false)
		}
		w.due = false
		w.bookmark.Reset(w.nextBookmark(s.opts.Now()))
	}
	now := s.opts.Now()
	s.mu.Unlock()
	if len(w.buf) > 0 {
		return nil
	}
	if next.IsZero() {
		w.expiry.Stop()
	} else {
		w.expiry.Reset(next.Sub(now))
	}
	select {
	case <-changed:
	case <-w.expiry.C:
	case <-w.bookmark.C:
		w.due = true
	case <-w.timeout.C:
		w.ended = true
	case <-w.end:
		w.ended = true
	case <-w.closed:
		return errors.New("apimodel: read on a closed watch body")
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
	return nil
}

// nextBookmark is the wait until the next bookmark, as the watch cache
// schedules them: a minute on, or 2 s before the watch's timeout if that
// comes first.
func (w *watchBody) nextBookmark(now time.Time) time.Duration {
	next := now.Add(BookmarkInterval)
	if pre := w.deadline.Add(-2 * time.Second); pre.Before(next) && pre.After(now) {
		next = pre
	}
	return next.Sub(now)
}

// collectLocked encodes the revisions after the cursor this watch sees.
// A watch whose reader fell behind a compaction (revisions it had not read
// are gone) ends with 410 Expired, as etcd cancels a watcher behind the
// compacted revision and kube-apiserver answers it "too old": it never
// skips what it did not send.
func (w *watchBody) collectLocked() {
	st := w.s.st
	if w.ended {
		return
	}
	if w.cursor+1 < st.compacted {
		w.buf = append(w.buf, frame(watch.Error, statusObject(apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.")))...)
		w.ended = true
		return
	}
	for i := firstAfter(st.history, w.cursor); i < len(st.history); i++ {
		r := st.history[i]
		if r.store != w.rt.store {
			continue
		}
		was := r.prev != nil && w.sel.keeps(r.key, r.prev)
		is := r.obj != nil && w.sel.keeps(r.key, r.obj)
		switch {
		case is && was:
			w.buf = append(w.buf, frame(watch.Modified, w.versioned(r.obj))...)
		case is:
			w.buf = append(w.buf, frame(watch.Added, w.versioned(r.obj))...)
		case was:
			// Deleted, or no longer selected: the object before, at this revision.
			gone := w.versioned(r.prev)
			objectMeta(gone).SetResourceVersion(strconv.FormatInt(r.rv, 10))
			w.buf = append(w.buf, frame(watch.Deleted, gone)...)
		}
	}
	w.cursor = max(w.cursor, st.rv) // a watch from a revision not reached yet stays there
}

// firstAfter is the index of the first revision after rv.
func firstAfter(history []revision, rv int64) int {
	lo, hi := 0, len(history)
	for lo < hi {
		mid := (lo + hi) / 2
		if history[mid].rv <= rv {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// versioned is a stored object as the watch's API shows it.
func (w *watchBody) versioned(o runtime.Object) runtime.Object {
	v := w.rt.fromStored(o)
	v.GetObjectKind().SetGroupVersionKind(w.rt.gv.WithKind(w.rt.kind))
	return v
}

// bookmarkFrame is a BOOKMARK at rv: an empty object but its
// resourceVersion (and the initial-events-end annotation when it ends the
// initial events).
func (w *watchBody) bookmarkFrame(rv int64, initialEnd bool) []byte {
	o := w.rt.newObject()
	o.GetObjectKind().SetGroupVersionKind(w.rt.gv.WithKind(w.rt.kind))
	m := objectMeta(o)
	m.SetResourceVersion(strconv.FormatInt(rv, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return frame(watch.Bookmark, o)
}

// Close ends the watch: a Read waiting returns, the timers stop.
func (w *watchBody) Close() error {
	w.closeOnce.Do(func() {
		close(w.closed)
		w.timeout.Stop()
		w.bookmark.Stop()
		w.expiry.Stop()
	})
	return nil
}

// stoppedTimer is a timer to Reset later.
func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// frame is one watch event as the JSON stream carries it.
func frame(t watch.EventType, obj any) []byte {
	b, err := json.Marshal(struct {
		Type   watch.EventType `json:"type"`
		Object any             `json:"object"`
	}{t, obj})
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": watch.Error, "object": statusObject(apierrors.NewInternalError(err))})
	}
	return append(b, '\n')
}

// statusObject is err's Status, as a watch's ERROR event carries it.
func statusObject(err *apierrors.StatusError) *metav1.Status {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return &st
}
