package config_test

import (
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/config"
)

func TestHTTPURL(t *testing.T) {
	for v, ok := range map[string]bool{
		"http://localhost:8080": true, "https://coworkjobs.example": true,
		"": false, "ftp://x": false, "https://": false, "localhost:8080": false, "://x": false,
	} {
		err := config.HTTPURL("PUBLIC_BASE_URL", v)
		if (err == nil) != ok {
			t.Errorf("HTTPURL(%q) = %v", v, err)
		}
		if err != nil && err.Error() != "PUBLIC_BASE_URL must be an absolute http(s) URL" {
			t.Errorf("HTTPURL(%q) says %q", v, err)
		}
	}
}
