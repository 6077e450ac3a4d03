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

func TestFreeSlot(t *testing.T) {
	out := "Available slots:\nSlot 1790\n    Slot info:\n        Token present:    yes\n    Token info:\n        Initialized:      yes\n" +
		"        Label:            a\nSlot 7\n    Slot info:\n        Description:      SoftHSM slot ID 0x7\n    Token info:\n        Initialized:      no\n"
	if got, ok := freeSlot(out); !ok || got != "7" {
		t.Errorf("freeSlot: %q %v, want 7", got, ok)
	}
	if _, ok := freeSlot("Slot 1\n    Token info:\n        Initialized:      yes\n"); ok {
		t.Error("freeSlot found a free slot where every token is initialized")
	}
}
