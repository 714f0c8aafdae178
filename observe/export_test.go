package observe

// AheadChunked is Ahead with chunks of chunkBytes, for tests that cross many chunk edges.
func (d *Decoder) AheadChunked(parsers, chunkBytes int) (stop func()) {
	return d.startAhead(parsers, chunkBytes)
}
