package devserver

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// A port chosen for a service stays taken until it is released for the
// service to bind: nobody else is handed it meanwhile, and a second hold
// of it says which port is in use.
func TestHeldPortsAreTakenUntilReleased(t *testing.T) {
	var held heldPorts
	port, err := held.hold("127.0.0.1", 0, "history port")
	require.NoError(t, err)
	require.NotZero(t, port)

	var other heldPorts
	_, err = other.hold("127.0.0.1", port, "UI port")
	var inUse *PortInUseError
	require.True(t, errors.As(err, &inUse), "%v", err)
	require.Equal(t, "UI port", inUse.Which)
	require.Equal(t, hostPort("127.0.0.1", port), inUse.Address)

	held.release()
	held.release() // a second release does nothing
	l, err := net.Listen("tcp", hostPort("127.0.0.1", port))
	require.NoError(t, err, "released, the port is free for its service")
	require.NoError(t, l.Close())
}
