package debug

import (
	"errors"
	"fmt"

	"hsdb/engine/model"
	"hsdb/inspect/client"
)

// LoadedLayers returns the decoder layers the module tree holds (First -1
// when it holds none).
func (s *Session) LoadedLayers() client.LayerSpan {
	sp := client.LayerSpan{First: -1, Last: -1, Total: s.E.Dims.Layers}
	n := 0
	for _, st := range s.E.Tree.Sites {
		if st.Layer < 0 || st.Depth != 2 {
			continue
		}
		if sp.First < 0 || st.Layer < sp.First {
			sp.First = st.Layer
		}
		sp.Last = max(sp.Last, st.Layer)
		n++
	}
	sp.Partial = n < sp.Total
	return sp
}

// matchSites returns the sites of the model that pattern matches, in
// visit order. Errors: a bad pattern, or ErrNoSite (saying which layers
// are loaded when the engine holds only some).
func (s *Session) matchSites(pattern string) ([]*model.Site, error) {
	p, err := ParsePattern(pattern)
	if err != nil {
		return nil, err
	}
	sites, err := p.Sites(s.E.Tree)
	if err != nil {
		return nil, s.noSite(err)
	}
	return sites, nil
}

// noSite adds to an ErrNoSite error which layers are loaded when the
// engine holds only some of them.
func (s *Session) noSite(err error) error {
	if !errors.Is(err, client.ErrNoSite) {
		return err
	}
	if sp := s.LoadedLayers(); sp.Partial {
		return fmt.Errorf("%w; this session loaded only decoder %s", err, sp)
	}
	return err
}
