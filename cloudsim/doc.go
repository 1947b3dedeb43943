// Package cloudsim is a simulated BragerOne device cloud: the REST interface
// under /v1, the Socket.IO realtime channel (namespace /ws) under /socket.io/,
// the web app's static site (the page at /, the files under /assets/), and a
// control endpoint under /control/ that switches modules online or offline,
// redeploys the web app and injects faults seen in the field.
//
// It owns realistic module and parameter state (stable devids, ~800 parameters
// per module across pools P4-P6, periodic drift pushed as live deltas) and
// reproduces the cloud's quirks: a modules/connect with a stale namespace SID
// answers 200 but binds nothing, the module-memory-updated event is the
// numeric event 22, error bodies are HTML for 5xx and JSON otherwise.
//
// It backs the `simulate` command, `serve --simulate`, and the integration
// tests and benchmarks of the other packages.
//
// # Web-app assets
//
// The static site shares the REST origin, so the assets URL is the cloud's
// URL. It serves the web app the way the live site does, written from the
// asset spec (docs/spec.md A-rows) in the live bundle's minified, obfuscated
// style (hex literals, _0x… names, quoted and computed keys, !0, void 0x0,
// builder functions, ['map'] calls, hex-escaped strings, export{x as
// default}):
//
//   - "/" is the app page naming /assets/index-<hash>.js; "/assets/" is an
//     autoindex listing with absolute links. Pages and files carry ETag and
//     Last-Modified and answer conditional requests with 304.
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
// Module i gets profile i mod 3. Its row carries the profile's deviceMenu and
// permissions; the registers of its symbols come first among its parameters
// (anonymous ones fill the rest, and a small ParamsPerModule keeps only the
// first of them); values start and drift inside each
// definition's n/x range, enums sit on labelled values, status words on bit
// patterns the definitions name (0x60 alarm, 0x0b work in P5.s0; bit 7 of a
// setting's P6.s<n> is INVISIBLE). The first profile is stopped out of fuel
// (power, fan and fuel fixed, the P5.v40/v41 counter at the spec's 38063);
// the valve profile's alarm has no label. What each module's menu shows
// under its permissions, with the chunk stem of its menu:
//
//	module 0, 3, …: boiler-installer, deviceMenu 153 (0)
//	  permissions DISPLAY_MENU_BOILER DISPLAY_MENU_DHW DISPLAY_MENU_SERVICE DISPLAY_MENU_INFO DISPLAY_PARAMETER_LEVEL_1 DISPLAY_PARAMETER_LEVEL_2
//	              DISPLAY_PARAMETER_LEVEL_MAX MODULE_COMMAND_SEND
//	  shows PARAM_P4_1 PARAM_P4_2 PARAM_P4_4 PARAM_P4_5 PARAM_P4_6 PARAM_P4_7
//	        PARAM_P4_9 PARAM_P5_40 PARAM_P6_1 PARAM_P6_5 PARAM_P6_7 PARAM_P6_9
//	        STATUS_P5_0 STATUS_P5_1 STATUS_P5_3 PARAM_P4_3 PARAM_P6_2 PARAM_P6_4
//	        STATUS_P5_2 PARAM_45 PARAM_34 PARAM_P6_6 PARAM_P6_8 PARAM_P4_8
//	  active alarms: 38 ERROR_BRAK_PALIWA ("Out of fuel" / "Brak paliwa")
//	module 1, 4, …: boiler-user, deviceMenu 153 (0)
//	  permissions DISPLAY_MENU_BOILER DISPLAY_PARAMETER_LEVEL_1 MODULE_COMMAND_SEND
//	  shows PARAM_P4_1 PARAM_P4_4 PARAM_P4_7 PARAM_P4_9 PARAM_P6_1 PARAM_P6_5
//	        PARAM_P6_9 STATUS_P5_0 STATUS_P5_1 STATUS_P5_3 PARAM_P4_8
//	  active alarms: none
//	module 2, 5, …: valve, deviceMenu 2190 (module.menu)
//	  permissions DISPLAY_MENU_VALVE DISPLAY_MENU_THERMOSTAT DISPLAY_PARAMETER_LEVEL_1 MODULE_COMMAND_SEND
//	  shows PARAM_P4_20 PARAM_P4_4 PARAM_P6_20 PARAM_P6_23 STATUS_P5_20 PARAM_P4_21
//	        PARAM_P6_21
//	  active alarms: 91 ERROR_MODUL_ROZSZERZEN (no label)
//
// Symbols: register, unit as displayed, en / pl label, panel per device
// menu, and where the unit code sits (PARAM_P4_22 and PARAM_P6_22 need
// DISPLAY_PARAMETER_LEVEL_2, which no profile has):
//
//	PARAM_P4_1   P4.v1       °C   "Boiler temperature" / "Temperatura kotła"; Boiler; u channel 0x1
//	PARAM_P4_2   P4.v2       °C   "Flue gas temperature" / "Temperatura spalin"; Boiler; u channel 0x1
//	PARAM_P4_3   P4.v3       °C   "Hot water temperature" / "Temperatura ciepłej wody"; Hot water; u channel 0x1
//	PARAM_P4_4   P4.v4       °C   "Outdoor temperature" / "Temperatura zewnętrzna"; Boiler | Valve 1; u channel 0x2f: raw − 127
//	PARAM_P4_5   P4.v5       %    "Fan power" / "Moc dmuchawy"; Boiler; u channel 0x5, not in the unit table (text units.5)
//	PARAM_P4_6   P4.v6       °C   "Feeder temperature" / "Temperatura podajnika"; Boiler; u channel 0x1
//	PARAM_P4_7   P4.v7       kW   "Boiler power" / "Moc kotła"; Boiler; u channel 0x31: raw × 0.1, one decimal
//	PARAM_P4_8   P4.v8       bar  "Water pressure" / "Ciśnienie wody"; Information; u channel 0x34: raw ÷ 10
//	PARAM_P4_9   P4.v9       %    "Fuel level" / "Poziom paliwa"; Boiler; u channel 0x2
//	STATUS_P5_0  P5.s0       -    "Boiler state" / "Stan kotła"; Boiler; definition unit 0x270e: computed state
//	STATUS_P5_1  P5.s1       -    "Central heating pump" / "Pompa CO"; Boiler; definition unit 0x270c: computed state
//	STATUS_P5_2  P5.s2       -    "Hot water pump" / "Pompa CWU"; Hot water; definition unit 0x270c: computed state
//	STATUS_P5_3  P5.s3       -    "Alarm indicator" / "Sygnalizacja alarmu"; Boiler; definition unit 0x270c: computed state
//	PARAM_P5_40  P5.v40+P5.v41 kg   "Fuel burned" / "Zużyte paliwo"; Boiler; definition unit 0x3
//	PARAM_P6_1   P6.v1       °C   "Boiler set temperature" / "Temperatura zadana kotła"; Boiler; u channel 0x1
//	PARAM_P6_2   P6.v2       °C   "Hot water set temperature" / "Temperatura zadana ciepłej wody"; Hot water; u channel 0x1
//	PARAM_P6_4   P6.v4       -    "Hot water priority" / "Priorytet ciepłej wody"; Hot water; u channel 0x9: enum; 0 Off, 1 On
//	PARAM_P6_5   P6.v5       -    "Operating mode" / "Tryb pracy"; Boiler; u channel 0x8: enum; 0 Winter, 1 Summer, 2 Automatic, 3 Off
//	PARAM_P6_6   P6.v6       min  "Pump run-on time" / "Czas wybiegu pompy"; Service parameters/Burner; u channel 0xa: raw × 6
//	PARAM_P6_7   P6.v7       -    "Night setback start" / "Początek obniżenia nocnego"; Boiler; u channel 0x42: time of day: 0 off, n → (n − 1) × 10 min
//	PARAM_P6_8   P6.v8       kW   "Maximum boiler power" / "Maksymalna moc kotła"; Service parameters/Burner; u channel 0x31: raw × 0.1, one decimal
//	PARAM_P6_9   P6.v9       °C   "Frost protection temperature" / "Temperatura ochrony przed zamarzaniem"; Boiler; u channel 0x1; hidden (INVISIBLE set)
//	PARAM_45     P6.v45      s    "Feeder cycle time" / "Czas cyklu podajnika"; Service parameters/Burner; u channel 0x4
//	PARAM_34     P6.v34      °C   "Boiler hysteresis" / "Histereza kotła"; Service parameters/Burner; u channel 0x1
//	PARAM_P4_20  P4.v20      °C   "Valve 1 temperature" / "Temperatura zaworu 1"; Valve 1; u channel 0x1
//	PARAM_P4_21  P4.v21      °C   "Room temperature" / "Temperatura pokojowa"; Thermostats; u channel 0x1
//	PARAM_P4_22  P4.v22      %    "Valve 1 opening" / "Otwarcie zaworu 1"; Valve 1; u channel 0x2
//	STATUS_P5_20 P5.s20      -    "Valve 1 pump" / "Pompa zaworu 1"; Valve 1; definition unit 0x270c: computed state
//	PARAM_P6_20  P6.v20      °C   "Valve 1 set temperature" / "Temperatura zadana zaworu 1"; Valve 1; u channel 0x1
//	PARAM_P6_21  P6.v21      °C   "Room set temperature" / "Temperatura zadana pokojowa"; Thermostats; u channel 0x32: raw × 0.5, one decimal
//	PARAM_P6_22  P6.v22      -    "Heating curve" / "Krzywa grzewcza"; Valve 1; u channel 0x33: (raw − 10) × 0.1, one decimal
//	PARAM_P6_23  P6.v23      -    "Valve 1 mode" / "Tryb pracy zaworu 1"; Valve 1; u channel 0xb: enum; 0 Off, 1 Radiators, 2 Underfloor, 3 Pump only
//
// Described and DescribedAlarms give the same expectations as data. The
// asset controls: RotateIndex (POST /control/assets/rotate-index) redeploys
// the web app: a new index hash (the old name answers 404), a new system
// version, the same chunks; AssetFile names a file. The fault kinds
// asset_broken (one file, by name or by its name before the hash) and
// assets_unreachable (the whole static site) break the site while REST and
// the realtime channel stay healthy.
package cloudsim
