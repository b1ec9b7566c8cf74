package journal

import (
	"testing"

	"github.com/fusee-dev/fusee/internal/testtier"
)

func TestMain(m *testing.M) { testtier.Main(m) }
