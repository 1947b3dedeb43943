// Package realtime owns the gateway: the one goroutine that keeps the exporter's
// picture of the cloud current. It logs in, discovers the modules, holds one
// Socket.IO session (through package transport), binds it to the modules with
// the current namespace SID, primes the parameter store over REST after every
// (re)connect, polls the module list, feeds the pure state machines of package
// outage, the connection lifecycle of package lifecycle and the recovery
// decisions of package ladder, and runs the actions they ask for.
//
// Concurrency: the loop goroutine owns every state machine. I/O (connects,
// binds, primes, polls, logins) runs in worker goroutines that post a closure
// back to the loop with their result, so the loop never blocks on the network.
// Readers (collectors, the status page) get an immutable Status published by
// the loop.
//
// Subpackages: transport (the Socket.IO client behind our own interface),
// store (the parameter store), lifecycle (when to dial, bind, reconnect and
// log in afresh, and what a recovery step does to the session) and ladder
// (the recovery ladder's decisions).
package realtime
