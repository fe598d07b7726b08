package jobapp

import (
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobview"
)

// The rendering is jobview's (the worker renders webhook bodies with it
// too); these names keep the handlers' reading short.
type (
	jobDTO       = jobview.Job
	jobDetailDTO = jobview.JobDetail
)

func toJobDTO(j *jobbus.Job, url string) jobDTO { return jobview.JobOf(j, url) }

func appendJob(b []byte, j *jobbus.Job, baseURL string) []byte {
	return jobview.AppendJob(b, j, baseURL)
}

func (h *handlers) toJobDetailDTO(d jobbus.Detail, owner bool) jobDetailDTO {
	return jobview.DetailOf(h.bus, d, owner)
}
