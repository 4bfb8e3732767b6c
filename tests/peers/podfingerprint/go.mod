module vri.invalid/peers/podfingerprint

go 1.24

require github.com/k8stopologyawareschedwg/podfingerprint v0.2.2

require github.com/OneOfOne/xxhash v1.2.8 // indirect
