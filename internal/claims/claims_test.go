package claims

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"playbook/internal/store"
)

func testDriver(t *testing.T) (*driver, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), "file://"+dir)
	require.NoError(t, err)
	return &driver{open: Open(st)}, dir
}

func storeOne(t *testing.T, d *driver, run string, p *commonpb.Payload) converter.StorageDriverClaim {
	t.Helper()
	cl, err := d.Store(converter.StorageDriverStoreContext{Context: context.Background(),
		Target: converter.StorageDriverWorkflowInfo{WorkflowID: run}}, []*commonpb.Payload{p})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	return cl[0]
}

func retrieve(d *driver, c converter.StorageDriverClaim) (*commonpb.Payload, error) {
	out, err := d.Retrieve(converter.StorageDriverRetrieveContext{Context: context.Background()}, []converter.StorageDriverClaim{c})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func payload(s string) *commonpb.Payload {
	return &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(s)}
}

func TestAClaimGivesBackItsPayloadAndIsNamedByItsContent(t *testing.T) {
	d, _ := testDriver(t)
	p := payload(`{"rows":` + strings.Repeat("1", 1000) + `}`)
	c := storeOne(t, d, "nightly-42", p)
	require.True(t, strings.HasPrefix(c.ClaimData["key"], "_claims/nightly-42/"), c.ClaimData)
	again := storeOne(t, d, "nightly-42", p)
	require.Equal(t, c, again, "the same value makes the same claim: a replayed command names what the first one stored")
	require.NotEqual(t, c, storeOne(t, d, "nightly-42", payload(`{}`)))
	got, err := retrieve(d, c)
	require.NoError(t, err)
	require.True(t, proto.Equal(p, got))
}

func TestAClaimThatCannotBeReadSaysWhereAndWhichStoreToGive(t *testing.T) {
	d, dir := testDriver(t)
	c := storeOne(t, d, "r1", payload(`"x"`))

	other, _ := testDriver(t)
	_, err := retrieve(other, c)
	var u *UnreadableError
	require.True(t, errors.As(err, &u), "%v", err)
	require.True(t, errors.Is(err, store.ErrNotFound))
	require.Contains(t, err.Error(), "not there")
	require.Contains(t, err.Error(), "PLAYBOOK_STORE")

	// What the store gives back is checked against the claim's digest.
	require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(c.ClaimData["key"])), []byte("tampered"), 0o600))
	_, err = retrieve(d, c)
	var m *store.Mismatch
	require.True(t, errors.As(err, &m), "%v", err)
}

func TestAKeyNamesItsRunAsOneSegment(t *testing.T) {
	require.Equal(t, "_claims/a%2Fb/s", Key("a/b", "s"))
	require.Equal(t, "_claims/_/s", Key("..", "s"))
	require.Equal(t, "_claims/_/s", Key("", "s"))
}

func TestAReadingClientWritesNoClaim(t *testing.T) {
	d, _ := testDriver(t)
	var o client.Options
	Use(&o, d.open, false)
	got, err := o.ExternalStorage.DriverSelector.SelectDriver(converter.StorageDriverSelectContext{}, payload("x"))
	require.NoError(t, err)
	require.Nil(t, got)
	Use(&o, d.open, true)
	got, err = o.ExternalStorage.DriverSelector.SelectDriver(converter.StorageDriverSelectContext{}, payload("x"))
	require.NoError(t, err)
	require.NotNil(t, got)
	require.Equal(t, Threshold, o.ExternalStorage.PayloadSizeThreshold)
}
