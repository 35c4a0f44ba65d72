// Package nscol holds columns of times (int64 unix ns) in about 4 bytes a
// value: the evidence's send, response and receipt times and the model
// checker's event intervals, at tens of millions of requests.
package nscol

import (
	"iter"
	"math"
)

// chunkBits sets the size of a Column chunk: 1024 values.
const chunkBits = 10

// Column is a column of int64 times (unix ns) held in about 4 bytes a
// value instead of 8, exact whatever the values: they are cut in chunks of
// 1024 consecutive values, and a chunk holds each as a uint32 offset from
// its base (its first value minus 2^31 ns) while every one lies within
// about ±2.1 s of that first value; a chunk with a value that does not
// holds all its values as int64 (12 bytes a value then, the unused offset
// beside each). Times appended roughly in order, as sends and responses
// are, fit: the delta encoding of time-series stores (Pelkonen et al.,
// "Gorilla", VLDB 2015, section 4.1.1), kept random-access. The zero
// Column is empty and ready; a copy shares its arrays, as a slice's does.
type Column struct {
	n      int
	off    []uint32
	chunks []chunk
}

// chunk is one chunk of a Column: base, or the values themselves
// (wide) when one of them is out of base's reach.
type chunk struct {
	base int64
	wide []int64
}

// Grow makes room for n more values.
func (c *Column) Grow(n int) {
	if need := c.n + n; need > cap(c.off) {
		off := make([]uint32, len(c.off), need)
		copy(off, c.off)
		c.off = off
		chunks := make([]chunk, len(c.chunks), need>>chunkBits+1)
		copy(chunks, c.chunks)
		c.chunks = chunks
	}
}

// AppendTo appends the values to dst, in order, and returns the extended
// slice (8 bytes a value: for a sort in place).
func (c *Column) AppendTo(dst []int64) []int64 {
	for j := range c.n {
		dst = append(dst, c.At(j))
	}
	return dst
}

// All yields each index and value in order (for i, t := range c.All()).
func (c *Column) All() iter.Seq2[int, int64] {
	return func(yield func(int, int64) bool) {
		for j := range c.n {
			if !yield(j, c.At(j)) {
				return
			}
		}
	}
}

// Len is the number of values.
func (c *Column) Len() int { return c.n }

// Add appends v.
func (c *Column) Add(v int64) {
	k := c.n & (1<<chunkBits - 1)
	if k == 0 {
		base := int64(math.MinInt64)
		if v > math.MinInt64+1<<31 {
			base = v - 1<<31
		}
		c.chunks = append(c.chunks, chunk{base: base})
	}
	ch := &c.chunks[len(c.chunks)-1]
	c.n++
	if ch.wide == nil {
		if v >= ch.base && uint64(v)-uint64(ch.base) <= math.MaxUint32 {
			c.off = append(c.off, uint32(uint64(v)-uint64(ch.base)))
			return
		}
		// out of reach: the chunk's values so far become int64s
		ch.wide = make([]int64, k, 1<<chunkBits)
		first := len(c.off) - k
		for i := range k {
			ch.wide[i] = ch.base + int64(c.off[first+i])
		}
	}
	ch.wide = append(ch.wide, v)
	c.off = append(c.off, 0)
}

// At returns value j (0 <= j < Len(); panics otherwise, as a slice index does).
func (c *Column) At(j int) int64 {
	ch := &c.chunks[j>>chunkBits]
	if ch.wide != nil {
		return ch.wide[j&(1<<chunkBits-1)]
	}
	return ch.base + int64(c.off[j])
}
