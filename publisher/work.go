package publisher

// wake tells the send loop there is something to send, or room in the
// window; it never blocks.
func (p *Buffered) wake() {
	select {
	case p.work <- struct{}{}:
	default:
	}
}
