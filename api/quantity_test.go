package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

func TestParseQuantity(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "1073741824", want: 1 << 30},
		{in: "1Ki", want: 1 << 10},
		{in: "128Mi", want: 128 << 20},
		{in: "2Gi", want: 2 << 30},
		{in: "1Ti", want: 1 << 40},
		{in: "1Pi", want: 1 << 50},
		{in: "7Ei", want: 7 << 60},
		{in: "1k", want: 1000},
		{in: "1024M", want: 1024e6},
		{in: "1G", want: 1e9},
		{in: "2T", want: 2e12},
		{in: "3P", want: 3e15},
		{in: "9E", want: 9e18},
		{in: "1.5Gi", want: 3 << 29},
		{in: "0.5Ki", want: 512},
		{in: "1.0001", want: 2},
		{in: "1e3", want: 1000},
		{in: "+5M", want: 5e6},
		{in: " 64Mi ", want: 64 << 20},
		{in: "", wantErr: "empty"},
		{in: "   ", wantErr: "empty"},
		{in: "-1Gi", wantErr: "negative"},
		{in: "100m", wantErr: "not a number"},
		{in: "2GB", wantErr: "not a number"},
		{in: "Gi", wantErr: "not a number"},
		{in: "1 Gi", wantErr: "not a number"},
		{in: "0x10", wantErr: "not a number"},
		{in: "0x1p4", wantErr: "not a number"},
		{in: "1_000", wantErr: "not a number"},
		{in: "NaN", wantErr: "not a number"},
		{in: "Inf", wantErr: "not a number"},
		{in: "infinity", wantErr: "not a number"},
		{in: "1e400", wantErr: "not a number"},
		{in: "8Ei", wantErr: "too large"},
		{in: "10E", wantErr: "too large"},
		{in: "9223372036854775808", wantErr: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := api.ParseQuantity(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				if tt.wantErr != "empty" {
					require.Contains(t, err.Error(), tt.in)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
