// Package fuzzinput reads a fuzz test's input as a program: one byte for
// each operation and each of its arguments. The cache's and the queue's
// fuzz tests use it.
package fuzzinput

// Reader hands out the input one byte at a time.
type Reader struct{ data []byte }

// New returns a Reader of data.
func New(data []byte) *Reader { return &Reader{data: data} }

// Next returns the next byte, and false once the input is exhausted.
func (r *Reader) Next() (byte, bool) {
	if len(r.data) == 0 {
		return 0, false
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b, true
}

// Arg returns the next byte, or 0 once the input is exhausted: an
// operation's arguments never fail to read.
func (r *Reader) Arg() byte {
	b, _ := r.Next()
	return b
}
