package fuzzinput

import "testing"

func TestReader(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		wantNext []byte // Next's bytes until it reports the end
	}{
		{name: "empty", data: nil},
		{name: "three bytes", data: []byte{7, 0, 255}, wantNext: []byte{7, 0, 255}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(tt.data)
			var got []byte
			for b, ok := r.Next(); ok; b, ok = r.Next() {
				got = append(got, b)
			}
			if string(got) != string(tt.wantNext) {
				t.Errorf("Next gave %v, want %v", got, tt.wantNext)
			}
			if a := r.Arg(); a != 0 {
				t.Errorf("Arg after the end = %d, want 0", a)
			}
		})
	}
}
