// Package webapp imitates the BragerOne web app's static site, as the
// exporter's parameter catalog reads it: the JavaScript assets of one
// deployment, written from the asset spec (docs/spec.md A-rows) in the live
// bundle's minified, obfuscated style (hex literals, _0x… names, quoted and
// computed keys, !0, void 0x0, builder functions, ['map'] calls,
// hex-escaped strings, export{x as default}):
//
//   - The app page names /assets/index-<hash>.js; the /assets/ listing is an
//     autoindex with absolute links. Every file carries an ETag and a
//     Last-Modified (File.Serve answers conditional requests with 304).
//   - The index holds the asset table (Vite's __vite__mapDeps list and the
//     lazy imports), the deviceMenu router map (deviceMenu 153 lists its
//     variant 101 before its variant 0, which is its menu; 2190 maps to
//     module.menu, 1 to 1), the i18n import map of en and pl, the language
//     configuration (default pl; PL, EN, and DE marked dev:!0 without
//     translation chunks), the unit descriptor table (scaled, offset, time
//     of day and enum units) and most definitions, built inline by builder
//     functions per pool.
//   - Definition chunks: PARAM_P4_7 (export default {…}), PARAM_P6_4
//     (export{x as default}), PARAM_P5_40 (a table keyed by the symbol,
//     exported by name) and PARAM_P6_21; they and the menu chunks import
//     their enums and helpers from a shared enums chunk.
//   - Translation chunks per language for the namespaces parameters, units,
//     app, routes, menu, alarms and MENUSERWIS_PARAMETRY (a title namespace
//     holding one string). Alarm names live in the namespace "alarms", keyed
//     by the alarm's code (the alarm row's "name", e.g. ERROR_BRAK_PALIWA):
//     the asset spec names no place for them. Polish labels appear both
//     \u-escaped and as UTF-8.
//   - Some hashes have a hyphen inside (the menu variant 101, the pl
//     parameters chunk) or at the end (the en units chunk).
//
// Deploy(n) is deployment n: a new index hash and system version, the same
// chunks. The files and the simulated modules' registers are built from one
// catalogue (catalog.go): the kinds of module (Profiles) with their menu,
// permissions, registers and alarms. The first profile is stopped out of
// fuel (power, fan and fuel fixed, the P5.v40/v41 counter at the spec's
// 38063); in the second the fuel level falls and is refilled, and the
// fuel-burned counter climbs with it; the valve profile's alarm has no label; status words sit on bit
// patterns the definitions name (0x60 alarm, 0x0b work in P5.s0; bit 7 of a
// setting's P6.s<n> is INVISIBLE). Describe says what the assets show a
// module of a given menu and permissions; testdata/described.txt tables
// every module and symbol, and a test keeps it true.
//
// Serving the site, its faults and its redeploys are package cloudsim's.
package webapp
