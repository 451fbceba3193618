package orderdb

// Batched reports whether a stock move and its journal entry share one
// round trip (the server runs several statements per packet).
func (s *Store) Batched() bool { return s.batch }

// SetBatched forces the one-packet move on or off, so tests run the path
// the demo's go-mysql-server takes too.
func (s *Store) SetBatched(on bool) { s.batch = on }
