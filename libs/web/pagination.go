package web

// Pagination is the spec's Pagination object, shared by every paginated list
// (jobs, blog, events).
type Pagination struct {
	Total        int  `json:"total"`
	Limit        int  `json:"limit"`
	Offset       int  `json:"offset"`
	CurrentCount int  `json:"current_count"`
	TotalPages   int  `json:"total_pages"`
	CurrentPage  int  `json:"current_page"`
	HasNext      bool `json:"has_next"`
	HasPrevious  bool `json:"has_previous"`
}

// NewPagination does the page math for count items listed from offset,
// limit per page, of total: total_pages = ceil(total / limit); a page past
// the end has current_count 0, no next page and a previous one.
func NewPagination(total, limit, offset, count int) Pagination {
	pages := 0
	if limit > 0 {
		pages = (total + limit - 1) / limit
	}
	page := 1
	if limit > 0 {
		page = offset/limit + 1
	}
	return Pagination{
		Total: total, Limit: limit, Offset: offset, CurrentCount: count, TotalPages: pages, CurrentPage: page,
		HasNext: offset+count < total, HasPrevious: offset > 0,
	}
}
