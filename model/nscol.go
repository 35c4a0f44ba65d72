package model

import "math"

// nsChunkBits sets the size of an nsColumn chunk: 1024 values.
const nsChunkBits = 10

// nsColumn is a column of int64 times (unix ns) held in about 4 bytes a
// value instead of 8, exact whatever the values: they are cut in chunks of
// 1024 consecutive values, and a chunk holds each as a uint32 offset from
// its base (its first value minus 2^31 ns) while every one lies within
// about ±2.1 s of that first value; a chunk with a value that does not
// holds all its values as int64 (12 bytes a value then, the unused offset
// beside each). Times appended roughly in order, as sends and responses
// are, fit: the delta encoding of time-series stores (Pelkonen et al.,
// "Gorilla", VLDB 2015, section 4.1.1), kept random-access.
type nsColumn struct {
	n      int
	off    []uint32
	chunks []nsChunk
}

// nsChunk is one chunk of an nsColumn: base, or the values themselves
// (wide) when one of them is out of base's reach.
type nsChunk struct {
	base int64
	wide []int64
}

// grow makes room for n more values.
func (c *nsColumn) grow(n int) {
	if need := c.n + n; need > cap(c.off) {
		off := make([]uint32, len(c.off), need)
		copy(off, c.off)
		c.off = off
		chunks := make([]nsChunk, len(c.chunks), need>>nsChunkBits+1)
		copy(chunks, c.chunks)
		c.chunks = chunks
	}
}

// len is the number of values.
func (c *nsColumn) len() int { return c.n }

// add appends v.
func (c *nsColumn) add(v int64) {
	k := c.n & (1<<nsChunkBits - 1)
	if k == 0 {
		base := int64(math.MinInt64)
		if v > math.MinInt64+1<<31 {
			base = v - 1<<31
		}
		c.chunks = append(c.chunks, nsChunk{base: base})
	}
	ch := &c.chunks[len(c.chunks)-1]
	c.n++
	if ch.wide == nil {
		if v >= ch.base && uint64(v)-uint64(ch.base) <= math.MaxUint32 {
			c.off = append(c.off, uint32(uint64(v)-uint64(ch.base)))
			return
		}
		// out of reach: the chunk's values so far become int64s
		ch.wide = make([]int64, k, 1<<nsChunkBits)
		first := len(c.off) - k
		for i := range k {
			ch.wide[i] = ch.base + int64(c.off[first+i])
		}
	}
	ch.wide = append(ch.wide, v)
	c.off = append(c.off, 0)
}

// at returns value j.
func (c *nsColumn) at(j int) int64 {
	ch := &c.chunks[j>>nsChunkBits]
	if ch.wide != nil {
		return ch.wide[j&(1<<nsChunkBits-1)]
	}
	return ch.base + int64(c.off[j])
}
