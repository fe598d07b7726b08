// Package dirapi is the directory's internal API on the wire
// (docs/internal-api.md): the directory's dirapp writes these shapes and the
// jobs service's dirclient reads them. They live beside the public contract,
// not in libs (which never learns what a city or a space is), so that
// neither service imports the other.
package dirapi

// City is a city of /internal/cities/resolve and /internal/catalog: integer
// id, coordinates as numbers, ISO 3166-1 country.
type City struct {
	ID          int64   `json:"id"`
	Name        string  `json:"name"`
	Slug        string  `json:"slug"`
	Confirmed   bool    `json:"confirmed"`
	Latitude    float64 `json:"latitude"`
	Longitude   float64 `json:"longitude"`
	CountryCode string  `json:"country_code"`
}

// Candidate is one city of an ambiguous resolution.
type Candidate struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// Resolution is the answer of /internal/cities/resolve: Result is
// "resolved" (with City), "ambiguous" (with Candidates) or "not_found".
type Resolution struct {
	Result     string      `json:"result"`
	City       *City       `json:"city,omitempty"`
	Candidates []Candidate `json:"candidates,omitempty"`
}

// Space is the answer of /internal/spaces/:id and a space of /internal/catalog.
type Space struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Slug      string `json:"slug"`
	Confirmed bool   `json:"confirmed"`
	IsPro     bool   `json:"is_pro"`
	CityID    int64  `json:"city_id"`
}

// AdminSpace is a space an address administers, with its role there
// (owner, admin or editor).
type AdminSpace struct {
	Space
	Role string `json:"role"`
}

// AdminSpaces is the answer of /internal/admins/spaces?email=: the spaces
// the address administers (none for an unknown address).
type AdminSpaces struct {
	Spaces []AdminSpace `json:"spaces"`
}

// Catalog is the answer of /internal/catalog: every city and space,
// confirmed or not.
type Catalog struct {
	Cities []City  `json:"cities"`
	Spaces []Space `json:"spaces"`
}
