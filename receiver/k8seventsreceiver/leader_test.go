package k8seventsreceiver

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

func TestScratchSharedFileStorage(t *testing.T) {
	ext := fileStorage(t, t.TempDir())[storageID].(storage.Extension)
	id := component.MustNewID("k8sevents")
	c1, err := ext.GetClient(context.Background(), component.KindReceiver, id, "")
	t.Log(err)
	start := time.Now()
	c2, err := ext.GetClient(context.Background(), component.KindReceiver, id, "")
	t.Log(err, time.Since(start))
	if c2 != nil {
		c2.Close(context.Background())
	}
	c1.Close(context.Background())
}
