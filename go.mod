module github.com/bragerone/bragerone_exporter

go 1.26.0

require (
	github.com/alecthomas/kong v1.17.0
	github.com/lmittmann/tint v1.2.1
)
