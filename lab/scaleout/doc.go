//go:build scaleout

// Package scaleout is the scale-out suite of issue 9: flash sales through
// HAProxy on the process topology of scripts/cluster.sh (Temporal services
// on PostgreSQL with two history hosts, the Redis Cluster, two workers and
// two APIs), one node lost or restarted per case, then every order settled
// and the invariant checker (`starter check`) clean. Behind the "scaleout"
// build tag: it needs the topology (cluster.sh up, which TestMain runs)
// and kills its nodes, so CI's go test ./... never runs it. Run it with
// scripts/scaleout.sh.
package scaleout
