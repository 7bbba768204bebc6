package engine

import "errors"

// ErrSnapshotSettings: Restore refused a snapshot made under another mode
// or series.key_ignores_resource_version; Saved and Carry take it.
var ErrSnapshotSettings = errors.New("snapshot made under other settings")

// A restart whose configuration changed the mode or the series key finds
// a state its engine cannot continue: the series in it are keyed and named
// under the other settings. What it counted must still be neither lost nor
// counted twice, so the state goes on under its own settings for as long
// as it takes to replay what was logged after it (Saved), and is then
// flushed into this engine (Carry).

// Saved is an engine with the settings snapshot was made under, and e's
// otherwise, restored from it.
func (e *Engine) Saved(snapshot []byte) (*Engine, error) {
	_, flags, _, err := header(snapshot)
	if err != nil {
		return nil, err
	}
	cfg := e.cfg
	cfg.Legacy, cfg.KeyIncludesResourceVersion = flags&1 != 0, flags&2 != 0
	saved, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := saved.Restore(snapshot); err != nil {
		return nil, err
	}
	return saved, nil
}

// Carry ends saved (see Saved) into e, which starts over: the emissions
// returned write every count saved held back, in its own mode; saved's
// totals of the watched Events and its clock go on in e, so that their
// next records count only what they grew by. Saved's series end there;
// their next occurrences open objects of e's settings.
func (e *Engine) Carry(saved *Engine) ([]Emission, error) {
	ems := saved.Flush(saved.now)
	if err := e.reset(); err != nil {
		return nil, err
	}
	e.totals, e.now = saved.totals, saved.now
	return ems, nil
}
