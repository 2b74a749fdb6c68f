package limit_test

import (
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

var srv *redistest.Server

func TestMain(m *testing.M) { redistest.Main(m, &srv) }
