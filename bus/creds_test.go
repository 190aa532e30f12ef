package bus_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/exocortex/exocortex/bus"
)

// operatorServer runs a NATS server in operator mode (decentralised JWT
// authentication) with one account, and returns its URL and a .creds file
// of a user of that account.
func operatorServer(t *testing.T) (url, credsFile string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	op, err := nkeys.CreateOperator()
	must(err)
	opPub, _ := op.PublicKey()
	opJWT, err := jwt.NewOperatorClaims(opPub).Encode(op)
	must(err)
	opClaims, err := jwt.DecodeOperatorClaims(opJWT)
	must(err)
	acc, err := nkeys.CreateAccount()
	must(err)
	accPub, _ := acc.PublicKey()
	accJWT, err := jwt.NewAccountClaims(accPub).Encode(op)
	must(err)
	user, err := nkeys.CreateUser()
	must(err)
	userPub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(userPub)
	uc.IssuerAccount = accPub
	userJWT, err := uc.Encode(acc)
	must(err)
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(userJWT, seed)
	must(err)
	credsFile = filepath.Join(t.TempDir(), "user.creds")
	must(os.WriteFile(credsFile, creds, 0o600))

	resolver := &server.MemAccResolver{}
	must(resolver.Store(accPub, accJWT))
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		TrustedOperators: []*jwt.OperatorClaims{opClaims}, AccountResolver: resolver})
	must(err)
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("operator-mode server not ready")
	}
	t.Cleanup(s.Shutdown)
	return s.ClientURL(), credsFile
}

func TestAClientWithANATSCredsFileReachesAnOperatorModeServer(t *testing.T) {
	clearNATSEnv(t)
	ctx := context.Background()
	url, credsFile := operatorServer(t)
	creds, err := bus.CredentialsFromFile(credsFile)
	if err != nil || creds.CredsFile != credsFile {
		t.Fatalf("CredentialsFromFile(%s) = %+v, %v; want a .creds file", credsFile, creds, err)
	}
	c, err := bus.Open(ctx, bus.Options{URL: url, Creds: creds})
	if err != nil {
		t.Fatalf("a client with the .creds file: %v", err)
	}
	c.Close()
	// From the environment, as a worker on another machine gets it.
	t.Setenv(bus.EnvNATSCreds, credsFile)
	c, err = bus.Open(ctx, bus.Options{URL: url})
	if err != nil {
		t.Fatalf("a client with %s: %v", bus.EnvNATSCreds, err)
	}
	c.Close()
	t.Setenv(bus.EnvNATSCreds, "")
	if c, err := bus.Open(ctx, bus.Options{URL: url}); err == nil {
		c.Close()
		t.Error("a client without the .creds file connected")
	}
	// The embedded server takes no user JWT.
	_, err = bus.Open(ctx, bus.Options{Creds: creds, Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"}})
	if err == nil || !strings.Contains(err.Error(), "external server") {
		t.Errorf("an embedded server with a .creds file: %v", err)
	}
}
