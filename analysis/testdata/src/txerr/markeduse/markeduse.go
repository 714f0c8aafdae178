// Package markeduse calls marked functions from another package: the mark travels as a fact.
package markeduse

import (
	"context"

	"txerr/marked"
)

func dropped(ctx context.Context, c marked.Committer) {
	n, _ := marked.Publish(ctx) // want `error of transaction call marked.Publish is assigned to _`
	_ = n
	c.Flush() // want `error of transaction call c.Flush is discarded`
}

func kept(ctx context.Context, c marked.Committer) error {
	if _, err := marked.Publish(ctx); err != nil {
		return err
	}
	return c.Flush()
}
