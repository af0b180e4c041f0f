package commands

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// namespaceRetention is how long a namespace that `setup` creates keeps
// closed runs' histories.
const namespaceRetention = 7 * 24 * time.Hour

// ensureNamespace registers the connection's namespace when the server has
// none of that name (a fresh self-hosted cluster has no "default"), and
// says whether it did. An existing namespace is left as it is.
func ensureNamespace(ctx context.Context, conn *connection) (bool, error) {
	svc := conn.client.WorkflowService()
	_, err := svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: conn.namespace})
	var notFound *serviceerror.NamespaceNotFound
	if err == nil || !errors.As(err, &notFound) {
		return false, err
	}
	_, err = svc.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        conn.namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(namespaceRetention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if errors.As(err, &exists) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, waitNamespaceServed(ctx, conn)
}

// waitNamespaceServed waits until the frontend serves a namespace just
// registered: its namespace cache takes a few seconds to see it.
func waitNamespaceServed(ctx context.Context, conn *connection) error {
	deadline := time.Now().Add(namespaceWait)
	for {
		_, err := conn.client.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: conn.namespace})
		var notFound *serviceerror.NamespaceNotFound
		if err == nil || !errors.As(err, &notFound) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// namespaceWait bounds waitNamespaceServed.
const namespaceWait = 30 * time.Second
