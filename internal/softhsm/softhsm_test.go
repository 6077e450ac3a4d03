package softhsm

import "testing"

const showSlots = `Available slots:
Slot 1530325197
    Token info:
        Serial number:    d745485e5b36e8cd
        Initialized:      yes
        User PIN init.:   no
        Label:            half                            
Slot 1530325198
    Token info:
        Initialized:      yes
        User PIN init.:   yes
        Label:            whole                           
Slot 1
    Token info:
        Initialized:      no
        User PIN init.:   no
        Label:                                            
`

func TestPinSet(t *testing.T) {
	for label, want := range map[string]bool{"whole": true, "half": false, "absent": false, "": false, "who": false} {
		if got := pinSet(showSlots, label); got != want {
			t.Errorf("pinSet(%q) = %v, want %v", label, got, want)
		}
	}
}
