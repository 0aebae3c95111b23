package dhcp

import (
	"time"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
)

// withRAInterval sets the period of unsolicited router advertisements
// (default 60s), so that a test sees several in a second.
func withRAInterval(d time.Duration) Option { return func(s *Server) { s.raInterval = d } }

// withLogLimit sets the log limiter's burst and period (default 10 at
// once, one per 10s), so that a test can count what is left out.
func withLogLimit(burst int, every time.Duration) Option {
	return func(s *Server) { s.lim = newLimiter(burst, every) }
}

// CoreService is what virtnet's own bindings ask for: bridge DHCPv4 and
// DHCPv6 to the VM's MAC only, masquerade DHCPv4 and DHCPv6; nothing for
// the others.
func CoreService(binding string) Service {
	switch binding {
	case api.BindingBridge:
		return Service{IPv4: true, IPv6: true, RequireMAC: true}
	case api.BindingMasquerade:
		return Service{IPv4: true, IPv6: true}
	}
	return Service{}
}

// NewConfig is [NewConfigFor] with the [CoreService] of the record's
// binding (the interface's when the record names none).
func NewConfig(vmi *api.VMI, iface *api.Interface, rec *cache.Interface, resolvConf []byte) (*Config, error) {
	if rec == nil {
		return nil, &FieldError{Field: "record", Value: "<nil>", Reason: "a cache record is required"}
	}
	b := rec.Binding
	if b == "" && iface != nil {
		b = iface.Binding()
	}
	svc := CoreService(b)
	if !svc.IPv4 && !svc.IPv6 {
		return nil, &FieldError{Field: "Binding", Value: b, Reason: "virtnet's own bindings serve DHCP only for bridge and masquerade"}
	}
	return NewConfigFor(vmi, iface, rec, resolvConf, svc)
}
