package web_test

import (
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

func TestNewPagination(t *testing.T) {
	tests := []struct {
		name                        string
		total, limit, offset, count int
		want                        web.Pagination
	}{
		{"first", 45, 20, 0, 20, web.Pagination{Total: 45, Limit: 20, Offset: 0, CurrentCount: 20, TotalPages: 3, CurrentPage: 1, HasNext: true}},
		{"last", 45, 20, 40, 5, web.Pagination{Total: 45, Limit: 20, Offset: 40, CurrentCount: 5, TotalPages: 3, CurrentPage: 3, HasPrevious: true}},
		{"exact", 40, 20, 20, 20, web.Pagination{Total: 40, Limit: 20, Offset: 20, CurrentCount: 20, TotalPages: 2, CurrentPage: 2, HasPrevious: true}},
		{"pastTheEnd", 45, 20, 100, 0, web.Pagination{Total: 45, Limit: 20, Offset: 100, TotalPages: 3, CurrentPage: 6, HasPrevious: true}},
		{"empty", 0, 20, 0, 0, web.Pagination{Limit: 20, CurrentPage: 1}},
	}
	for _, tc := range tests {
		if got := web.NewPagination(tc.total, tc.limit, tc.offset, tc.count); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
