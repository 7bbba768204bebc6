//go:build amd64 || arm64 || ppc64le || s390x || 386

package k8sevent

import "unsafe"

// keyWord is the 8 bytes of k at at (at+8 <= len(k)) as one word: one
// load where the processor reads unaligned words.
func keyWord(k string, at int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.StringData(k)), at))
}
