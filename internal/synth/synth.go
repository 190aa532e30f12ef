// Package synth makes synthetic embedding-like vectors for the vector store
// tests and benchmarks, deterministically from a seed.
//
// Uniformly random high-dimensional vectors are unrealistically hard for any
// approximate nearest-neighbour index: they have no low-dimensional
// structure, and every point is almost equally far from every other.
// Sentence embeddings are the opposite: they cluster by topic and have a low
// intrinsic dimension. Gen imitates that:
//
//  1. A latent space of Latent dimensions (default 64) with a decaying
//     spectrum: coordinate j has standard deviation (1+j)^(-Decay/2)
//     (Decay 1 by default, so a few directions carry most of the variance,
//     as in real embeddings).
//  2. Topics centres c_t ~ N(0, diag(σ_j²)), t < Topics.
//  3. A point picks a topic t uniformly and draws
//     z = c_t + Spread · N(0, diag(σ_j²)).
//  4. It is mapped to Dim dimensions by a fixed random matrix A
//     (entries N(0, 1/Latent)), plus isotropic noise of total norm about
//     Noise·|Az| (entries N(0, Noise²·|Az|²/Dim)), then L2-normalised.
//
// Queries are drawn the same way from their own random stream (they are not
// copies of data points). Point i and query j are each generated from their
// own seeded stream, so any one can be regenerated without the others and
// a million-point set never has to be held in memory.
//
// The defaults (64 latent dims, Spread 0.5, Noise 0.3, 1 topic per 500 points)
// give, at 100k points, a mean cosine of ~0.0 between random pairs and
// ~0.8 between a query and its nearest neighbour; Stats measures them.
package synth

import (
	"cmp"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/viterin/vek/vek32"
)

// Params describe a synthetic data set.
type Params struct {
	Seed   uint64
	Dim    int     // output dimension, e.g. 384
	Latent int     // latent dimension
	Topics int     // number of topic centres
	Spread float64 // within-topic spread relative to the spread of the centres
	Noise  float64 // isotropic noise norm relative to the signal norm
	Decay  float64 // latent spectrum: variance of coordinate j ∝ (1+j)^-Decay
}

// Default returns the parameters used by the tests and benchmarks for a data
// set of n points.
func Default(seed uint64, dim, n int) Params {
	return Params{Seed: seed, Dim: dim, Latent: 64, Topics: max(8, n/500), Spread: 0.5, Noise: 0.3, Decay: 1}
}

// Gen generates the data set of Params.
type Gen struct {
	p       Params
	sigma   []float64 // latent standard deviations
	centres [][]float64
	a       []float32 // Dim × Latent, row-major
}

// New builds the generator: the latent spectrum, the topic centres and the
// map A.
func New(p Params) *Gen {
	g := &Gen{p: p, sigma: make([]float64, p.Latent), a: make([]float32, p.Dim*p.Latent)}
	for j := range g.sigma {
		g.sigma[j] = math.Pow(1+float64(j), -p.Decay/2)
	}
	r := rand.New(rand.NewPCG(p.Seed, 0xc0ffee))
	scale := 1 / math.Sqrt(float64(p.Latent))
	for i := range g.a {
		g.a[i] = float32(r.NormFloat64() * scale)
	}
	g.centres = make([][]float64, p.Topics)
	for t := range g.centres {
		c := make([]float64, p.Latent)
		for j := range c {
			c[j] = r.NormFloat64() * g.sigma[j]
		}
		g.centres[t] = c
	}
	return g
}

// Params returns the generator's parameters.
func (g *Gen) Params() Params { return g.p }

// Vector writes data point i into dst (length Dim) and returns its topic.
func (g *Gen) Vector(i int, dst []float32) int {
	return g.draw(rand.New(rand.NewPCG(g.p.Seed^0xda7a, uint64(i))), dst)
}

// Query writes query j into dst and returns its topic.
func (g *Gen) Query(j int, dst []float32) int {
	return g.draw(rand.New(rand.NewPCG(g.p.Seed^0x9e77, uint64(j))), dst)
}

func (g *Gen) draw(r *rand.Rand, dst []float32) int {
	t := r.IntN(len(g.centres))
	z := make([]float32, g.p.Latent)
	for j := range z {
		z[j] = float32(g.centres[t][j] + g.p.Spread*r.NormFloat64()*g.sigma[j])
	}
	var ss float64
	for d := range g.p.Dim {
		v := vek32.Dot(g.a[d*g.p.Latent:(d+1)*g.p.Latent], z)
		dst[d] = v
		ss += float64(v) * float64(v)
	}
	noise := g.p.Noise * math.Sqrt(ss/float64(g.p.Dim))
	for d := range dst[:g.p.Dim] {
		dst[d] += float32(noise * r.NormFloat64())
	}
	Normalize(dst)
	return t
}

// Uniform writes vector i of a data set drawn uniformly from the unit
// sphere into dst (the hard case: no structure at all).
func Uniform(seed uint64, i int, dst []float32) {
	r := rand.New(rand.NewPCG(seed^0x0417, uint64(i)))
	for d := range dst {
		dst[d] = float32(r.NormFloat64())
	}
	Normalize(dst)
}

// Normalize scales v to unit length in place.
func Normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= inv
	}
}

// Neighbor is a data point and its exact cosine similarity to a query.
type Neighbor struct {
	ID    int
	Score float32
}

// ExactTopK returns, for each query, the k data points with the highest
// cosine similarity, best first, by brute force over n points produced by
// vec (called once per point, from several goroutines). It streams: only
// the queries and the running top-k are held.
func ExactTopK(n, dim int, vec func(i int, dst []float32), queries [][]float32, k int) [][]Neighbor {
	workers := runtime.GOMAXPROCS(0)
	parts := make([][][]Neighbor, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			top := make([][]Neighbor, len(queries))
			v := make([]float32, dim)
			for i := w; i < n; i += workers {
				vec(i, v)
				for qi, q := range queries {
					s := vek32.Dot(q, v)
					t := top[qi]
					if len(t) == k && s <= t[k-1].Score {
						continue
					}
					pos, _ := slices.BinarySearchFunc(t, s, func(a Neighbor, s float32) int { return cmp.Compare(s, a.Score) })
					if len(t) < k {
						t = append(t, Neighbor{})
					}
					copy(t[pos+1:], t[pos:])
					t[pos] = Neighbor{ID: i, Score: s}
					top[qi] = t
				}
			}
			parts[w] = top
		})
	}
	wg.Wait()
	out := make([][]Neighbor, len(queries))
	for qi := range queries {
		var all []Neighbor
		for _, p := range parts {
			all = append(all, p[qi]...)
		}
		slices.SortFunc(all, func(a, b Neighbor) int {
			if c := cmp.Compare(b.Score, a.Score); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		out[qi] = all[:min(k, len(all))]
	}
	return out
}

// Recall is the fraction of the exact top-k ids found among the first k of
// got.
func Recall(exact [][]Neighbor, got [][]int, k int) float64 {
	hit, total := 0, 0
	for qi, ex := range exact {
		want := map[int]bool{}
		for _, nb := range ex[:min(k, len(ex))] {
			want[nb.ID] = true
		}
		for _, id := range got[qi][:min(k, len(got[qi]))] {
			if want[id] {
				hit++
			}
		}
		total += len(want)
	}
	if total == 0 {
		return 1
	}
	return float64(hit) / float64(total)
}

// Stats are similarity statistics of a data set, for calibrating Params.
type Stats struct {
	MeanPairCos float64 // mean cosine of random pairs of points
	MeanTop1Cos float64 // mean cosine of a query's nearest neighbour
	MeanTop10   float64 // mean cosine of a query's 10th nearest neighbour
	Gap10       float64 // mean cosine gap between the 10th and 11th neighbours
}

// Measure computes Stats over n points and nq queries.
func Measure(g *Gen, n, nq int) Stats {
	dim := g.p.Dim
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = make([]float32, dim)
		g.Vector(i, vecs[i])
	}
	var st Stats
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		st.MeanPairCos += float64(vek32.Dot(vecs[r.IntN(n)], vecs[r.IntN(n)])) / 2000
	}
	qs := make([][]float32, nq)
	for j := range qs {
		qs[j] = make([]float32, dim)
		g.Query(j, qs[j])
	}
	top := ExactTopK(n, dim, func(i int, dst []float32) { copy(dst, vecs[i]) }, qs, 11)
	for _, t := range top {
		st.MeanTop1Cos += float64(t[0].Score) / float64(nq)
		st.MeanTop10 += float64(t[9].Score) / float64(nq)
		st.Gap10 += float64(t[9].Score-t[10].Score) / float64(nq)
	}
	return st
}
