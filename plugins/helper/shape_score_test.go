package helper

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildBrokenLinearFunction(t *testing.T) {
	tests := []struct {
		name  string
		shape FunctionShape
		p     []int64
		want  []int64
	}{
		{
			name:  "down from (10,100) to (40,0), then up to (60,50)",
			shape: FunctionShape{{10, 100}, {40, 0}, {60, 50}},
			p:     []int64{0, 10, 11, 25, 40, 50, 60, 100},
			// left of the first point: its score; 100 + (-100)*1/30
			// truncates to 97; right of the last point: its score.
			want: []int64{100, 100, 97, 50, 0, 25, 50, 50},
		},
		{
			name:  "one point: its score everywhere",
			shape: FunctionShape{{50, 70}},
			p:     []int64{0, 50, 100},
			want:  []int64{70, 70, 70},
		},
		{
			name:  "VolumeBinding's default: 100 - utilization",
			shape: FunctionShape{{0, 100}, {100, 0}},
			p:     []int64{0, 25, 50, 100},
			want:  []int64{100, 75, 50, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := BuildBrokenLinearFunction(tt.shape)
			var got []int64
			for _, p := range tt.p {
				got = append(got, f(p))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("f(p) (-want +got):\n%s", diff)
			}
		})
	}
}
