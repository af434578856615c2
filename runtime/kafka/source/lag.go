package source

// Lag implements runtime.LagReporter: each partition's high watermark as
// its last fetch told it, less the next offset to read; -1 before any
// fetch told one.
func (r *reader) Lag() int64 {
	lag := int64(-1)
	for i, pc := range r.pcs {
		if hw := pc.HighWaterMarkOffset(); hw > 0 {
			lag = max(lag, hw-r.next[r.parts[i]], 0)
		}
	}
	return lag
}
