package bucketwrite

import (
	"testing"

	"github.com/zae-limiter/zae-limiter-go/internal/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }
