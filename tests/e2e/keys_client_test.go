package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/coworkjobs/coworkjobs/api/client"
)

// The key API through the generated client alone: a space's manager key
// (made by the operators' command) creates a key, which works; lists it
// without its secret; rotates it with a grace period; revokes the
// replacement; and reads the audit log, page by page. Every answer is
// checked against the document (checkedDoer).
func TestKeyAPIThroughTheGeneratedClient(t *testing.T) {
	ctx := context.Background()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "gateway-keys"), "create", "-name", "e2e manager", "-space", "1",
		"-scopes", "keys:manage,read,jobs:write", "-json")
	cmd.Env = s.env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gateway-keys: %v", err)
	}
	var mgr struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(out, &mgr); err != nil {
		t.Fatal(err)
	}
	c := sdk(t, mgr.Key, "header")
	restricted := true
	created, err := c.CreateKeyWithResponse(ctx, client.KeyCreateRequest{Name: "client widget", Scopes: []client.Scope{"jobs:read"}, Restricted: &restricted})
	if err != nil || created.JSON201 == nil {
		t.Fatalf("create: %v %s", err, created.Body)
	}
	k := created.JSON201.Data
	if k.Key == "" || !k.Restricted || k.SpaceId == nil || *k.SpaceId != 1 {
		t.Fatalf("created: %+v", k)
	}
	if r, err := sdk(t, k.Key, "bearer").ListJobsWithResponse(ctx, nil); err != nil || r.StatusCode() != 200 {
		t.Fatalf("the new key: %v %d", err, r.StatusCode())
	}
	list, err := c.ListKeysWithResponse(ctx)
	if err != nil || list.JSON200 == nil {
		t.Fatalf("list: %v", err)
	}
	found := false
	for _, x := range list.JSON200.Data.Keys {
		found = found || x.Id == k.Id
	}
	if !found {
		t.Error("the new key is not listed")
	}
	grace := 3600
	rot, err := c.RotateKeyWithResponse(ctx, k.Id, client.RotateKeyJSONRequestBody{GraceSeconds: &grace})
	if err != nil || rot.JSON201 == nil || rot.JSON201.Data.Key == k.Key {
		t.Fatalf("rotate: %v %s", err, rot.Body)
	}
	old, err := c.GetKeyWithResponse(ctx, k.Id)
	if err != nil || old.JSON200 == nil || old.JSON200.Data.Status != "expiring" {
		t.Fatalf("old key after rotation: %v %s", err, old.Body)
	}
	if r, err := c.RevokeKeyWithResponse(ctx, rot.JSON201.Data.Id, nil); err != nil || r.StatusCode() != 204 {
		t.Fatalf("revoke: %v %d", err, r.StatusCode())
	}
	limit := 2
	var events int
	params := &client.ListKeyEventsParams{Limit: &limit}
	for range 20 {
		page, err := c.ListKeyEventsWithResponse(ctx, params)
		if err != nil || page.JSON200 == nil {
			t.Fatalf("events: %v", err)
		}
		events += len(page.JSON200.Data.Events)
		if page.JSON200.Data.NextCursor == nil {
			break
		}
		params.Cursor = page.JSON200.Data.NextCursor
	}
	// At least: the manager's creation, the key's, the rotation, the
	// replacement's creation and its revocation.
	if events < 5 {
		t.Errorf("%d events", events)
	}
}
