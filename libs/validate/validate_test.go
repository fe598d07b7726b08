package validate_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/validate"
)

// A wrapped Error is found with errors.As and says every problem.
func TestError(t *testing.T) {
	err := fmt.Errorf("create: %w", &validate.Error{What: "job", Problems: []string{"title is required", "plan is unknown"}})
	var ve *validate.Error
	if !errors.As(err, &ve) || len(ve.Problems) != 2 {
		t.Fatalf("errors.As(%v) = %v", err, ve)
	}
	if want := "create: invalid job: title is required; plan is unknown"; err.Error() != want {
		t.Fatalf("%q, want %q", err.Error(), want)
	}
}
