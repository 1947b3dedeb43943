// Package fleet owns the whole account: one login shared by every object
// (installation), the account's object list read at start, on a schedule
// and after every login, and one realtime gateway per watched object,
// started when an object joins the account and stopped, with every series
// of it and its modules, when it leaves. Which objects to start and stop is
// a pure decision (Decide); the Fleet executes it.
//
// The cloud binds a realtime session to the modules of one object (the
// group_id of modules/connect and of the listen emits), so the fleet holds
// one Socket.IO session per object, each with its own hysteresis, push
// health and recovery ladder; the REST client, its token and its four
// requests in flight are shared.
package fleet
