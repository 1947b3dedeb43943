// Package cloudapi names what the exporter sees of the cloud's interface, as
// the fixed vocabularies its metrics, logs and errors label by: the REST
// endpoint templates (Endpoints), the outcomes of a login (LoginOutcomes) and
// the kinds of realtime event (EventKinds).
//
// Each vocabulary is defined here once. The packages that talk to the cloud
// speak it (cloudclient names every request by its template and classifies
// logins, realtime/transport classifies pushed events), and the collector
// renders it, without importing either. Nothing here does I/O.
package cloudapi
