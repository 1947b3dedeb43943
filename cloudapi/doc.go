// Package cloudapi names what the exporter sees of the cloud's interface, as
// the fixed vocabularies its metrics, logs and errors label by: the REST
// endpoint templates (Endpoints), the outcomes of a login (LoginOutcomes),
// the realtime events' names on the wire (WireParamsChange …) and their
// kinds (EventKinds); and the account's standing with the cloud
// (AccountState), which the REST client keeps and the collector and the
// status page render.
//
// Each vocabulary is defined here once. The packages that talk to the cloud
// speak it (cloudclient names every request by its template and classifies
// logins, realtime/transport classifies pushed events), and the collector
// renders it, without importing either. Nothing here does I/O.
package cloudapi
