package importsync

import (
	"context"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus"
)

// Activities poll the sources.
type Activities struct {
	Imports *importbus.Business
}

// Poll polls the source when it is due (importbus.Business.Poll).
func (a *Activities) Poll(ctx context.Context, in SourceInput) (Polled, error) {
	p, err := a.Imports.Poll(ctx, in.SourceID)
	if err != nil {
		return Polled{}, err
	}
	return Polled{Gone: p.Gone, NextPoll: p.NextPoll}, nil
}
