package runtime

import "math"

// Watermarks combines the event-time watermarks of several inputs into one,
// the least of them (Flink: StatusWatermarkValve, with which an operator
// takes the minimum of its input channels' watermarks; a Kafka source
// reader combines the watermarks of its partitions the same way). It keeps
// the newest watermark seen of each input, so an input whose watermark goes
// back changes nothing. Until every input has delivered one the combined
// watermark is 0 (none), and it stays 0 for as long as one input delivers
// nothing: Flink leaves an input that has been quiet for a while out of the
// minimum (source idleness, WatermarkStrategy.withIdleness); faultline has
// no idleness, so a partition or input channel that never delivers a record
// holds the watermark back for good, and with it whatever waits on it (the
// join's state TTL then sweeps nothing). The zero value has no inputs.
type Watermarks struct {
	of  []int64 // the newest watermark of each input; 0: none yet
	min int64   // the least of of
}

// NewWatermarks returns Watermarks over n inputs, none of which has
// delivered a watermark yet.
func NewWatermarks(n int) Watermarks { return Watermarks{of: make([]int64, n)} }

// Advance notes watermark t of input i and returns the combined watermark.
// It walks the inputs only when input i held the minimum, so that a
// watermark on every record costs a comparison or two.
func (w *Watermarks) Advance(i int, t int64) int64 {
	old := w.of[i]
	if t <= old {
		return w.min
	}
	w.of[i] = t
	if old == w.min {
		w.min = least(w.of)
	}
	return w.min
}

// End says that input i delivers nothing more (Flink: a finished split or
// input channel): it no longer holds the combined watermark back.
func (w *Watermarks) End(i int) {
	w.of[i] = math.MaxInt64
	w.min = least(w.of)
}

// Current is the combined watermark: the least over the inputs of the
// newest watermark each delivered, 0 while one has delivered none.
func (w *Watermarks) Current() int64 { return w.min }

func least(of []int64) int64 {
	if len(of) == 0 {
		return 0
	}
	m := of[0]
	for _, t := range of[1:] {
		m = min(m, t)
	}
	return m
}

// InputWatermarks are an operator's Watermarks over the input channels of
// its subtask (OperatorContext.InputChannels), each record's watermark
// counted for the channel it came from (OperatorContext.channel). Flink
// sends watermarks as elements of their own, through every channel; here
// they ride on the records (EventTime, Order.Watermark), so a channel's
// watermark moves only when a record comes through it: a subtask that a
// hash edge sends no records to learns nothing from it.
type InputWatermarks struct {
	Watermarks
	channel *int
}

// newInputWatermarks returns the watermarks of the input channels of the
// subtask ctx belongs to; outside a subtask, of one channel.
func NewInputWatermarks(ctx *OperatorContext) InputWatermarks {
	ch := ctx.channel
	if ch == nil {
		ch = new(int)
	}
	return InputWatermarks{Watermarks: NewWatermarks(max(1, ctx.InputChannels)), channel: ch}
}

// Note notes watermark t of the record being processed and returns the
// operator's watermark, the least over its input channels.
func (w *InputWatermarks) Note(t int64) int64 { return w.Advance(*w.channel, t) }
