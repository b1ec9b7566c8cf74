package etcdstore

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fusee-dev/fusee/ringfile"
)

// Sentinels for errors.Is.
var (
	// ErrUnreachable: no etcd endpoint answered in time.
	ErrUnreachable = errors.New("etcd unreachable")
	// ErrDenied: etcd refused the credentials or the access.
	ErrDenied = errors.New("etcd permission denied")
	// ErrAbsent: the namespace has no policy key: not coordinated yet.
	ErrAbsent = errors.New("no policy in etcd")
	// ErrBadValue: the key holds a value the reference would not read.
	ErrBadValue = errors.New("unreadable policy value")
)

// UnreachableError: the cluster did not answer a request within the
// command timeout (down, partitioned, or without a quorum: a cluster that
// lost its quorum leaves writes and linearizable reads waiting).
type UnreachableError struct {
	Endpoints []string
	Elapsed   time.Duration
	What, Key string
	Timeout   string // the flag that bounded the wait
	Err       error
}

func (e *UnreachableError) Error() string {
	outcome := "nothing was written"
	if e.What != "reading" && e.What != "authenticating" {
		outcome = "the write is either wholly committed or not at all: read the key before retrying"
	}
	return fmt.Sprintf("etcd at %s did not answer %s %s within %s (%s): check that the endpoints are right, that the cluster is up and has a quorum (etcdctl endpoint health), and that TLS settings match; %s [%v]",
		strings.Join(e.Endpoints, ","), e.What, e.Key, e.Elapsed.Round(10*time.Millisecond), e.Timeout, outcome, e.Err)
}

func (e *UnreachableError) Unwrap() []error { return []error{ErrUnreachable, e.Err} }

// DeniedError: authentication failed or the user may not touch the key.
type DeniedError struct {
	Name, Key, User, What string
	Bindings              string // the prefix of the namespace's binding keys
	Err                   error
}

func (e *DeniedError) Error() string {
	user := e.User
	if user == "" {
		user = "(no user: give --user)"
	}
	if e.What == "authenticating" {
		return fmt.Sprintf("%s: etcd refused user %s: %v (check --user and --password)", e.Name, user, e.Err)
	}
	return fmt.Sprintf("%s: etcd denied %s %s (with the cell bindings under %s) to user %s: grant a role readwrite on both (etcdctl role grant-permission ROLE readwrite %s --prefix, and the same for %s) [%v]",
		e.Name, e.What, e.Key, e.Bindings, user, KeyPrefix, BindingPrefix, e.Err)
}

func (e *DeniedError) Unwrap() []error { return []error{ErrDenied, e.Err} }

// AbsentError: the key does not exist.
type AbsentError struct{ Name, Namespace string }

func (e *AbsentError) Error() string {
	return fmt.Sprintf("%s: no policy: namespace %s is not coordinated yet (create it with `fusee ring init --store ...` or `fusee ring push FILE --store ...`), or the namespace or endpoints are wrong",
		e.Name, e.Namespace)
}

func (e *AbsentError) Unwrap() error { return ErrAbsent }

// ValueError: the stored value is not what the reference writes.
type ValueError struct {
	Name string
	Err  error
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("%s: the stored value is not a policy the reference coordinator would read: %v (see it with `etcdctl get KEY --print-value-only`; fusee writes nothing over a value it cannot read)", e.Name, e.Err)
}

func (e *ValueError) Unwrap() []error { return []error{ErrBadValue, e.Err} }

// isUnavailable reports a gRPC Unavailable: no endpoint could be dialed.
func isUnavailable(err error) bool {
	if s, ok := status.FromError(err); ok {
		return s.Code() == codes.Unavailable || s.Code() == codes.DeadlineExceeded
	}
	return false
}

var _ ringfile.Store = (*Store)(nil)
