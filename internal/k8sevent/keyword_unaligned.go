//go:build amd64 || arm64 || ppc64le || s390x || 386

package k8sevent

import "unsafe"

// keyWord is the 8 bytes of k at at (at+8 <= len(k)) as one word: one
// load where the processor reads unaligned words.
func keyWord(k string, at int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.StringData(k)), at))
}

// UnalignedLoads: this processor loads and stores words at any address. The build
// constraint of keyword_unaligned.go is the one list of the processors
// that do: keyWord here and the engine's key copy both follow it.
const UnalignedLoads = true
