package cpu_test

import (
	"testing"

	"github.com/offload/offload/provider/providertest"
	"github.com/offload/offload/providers/cpu"
)

func TestConformance(t *testing.T) {
	f := cpu.Detect()
	if len(cpu.New(f).Capabilities()) == 0 {
		t.Skip("this CPU has none of the instructions the cpu provider uses")
	}
	providertest.TestProvider(t, cpu.New(f))
}
