package main

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding/masquerade"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
)

// renderPlan draws, per interface in the guest's order, the path from the
// pod link to the VM's NIC as the records describe it.
// source says where the records come from.
func renderPlan(vmi *api.VMI, store *cache.Store, items []phase2.Item, source string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "VMI %s/%s (uid %s): %d interface(s), records from %s\n",
		vmi.Metadata.Namespace, vmi.Metadata.Name, vmi.Metadata.UID, len(items), source)
	for _, it := range items {
		b.WriteString("\n")
		p := it.Pair
		kind := "pod network"
		if p.Network.Multus != nil {
			kind = "multus " + p.Network.Multus.NetworkName
		}
		fmt.Fprintf(&b, "[%d] interface %q: %s binding, network %q (%s)\n", p.Index, p.Interface.Name, p.Binding(), p.Network.Name, kind)
		pod, _ := store.ReadProgress(vmi.Metadata.UID, p.Interface.Name)
		if pod != nil {
			fmt.Fprintf(&b, "    phase1 state: %s\n", pod.State)
		}
		planInterface(&b, vmi, p, pod, it.Record)
	}
	return b.String()
}

func row(b *strings.Builder, label, name string, details ...string) {
	line := fmt.Sprintf("    %-10s %-10s %s", label, name, strings.Join(slices.DeleteFunc(details, func(s string) bool { return s == "" }), "  "))
	b.WriteString(strings.TrimRight(line, " ") + "\n")
}

func arrow(b *strings.Builder, note string) {
	if note == "" {
		b.WriteString("        │\n")
		return
	}
	fmt.Fprintf(b, "        │  %s\n", note)
}

func kv(k string, v any) string {
	if z, ok := v.(interface{ IsValid() bool }); ok && !z.IsValid() {
		return ""
	}
	s := fmt.Sprint(v)
	if s == "" || s == "0" {
		return ""
	}
	return k + " " + s
}

func podLinkRow(b *strings.Builder, podIface string, pod *cache.Progress) {
	l := (*cache.Link)(nil)
	if pod != nil {
		l = pod.Discovered
	}
	if l == nil {
		row(b, "pod link", podIface, "(not discovered)")
		return
	}
	row(b, "pod link", l.Name, l.Type, kv("mac", l.MAC), kv("mtu", l.MTU), joinValid(l.Addresses...))
	for _, r := range l.Routes {
		via := ""
		if r.Gateway.IsValid() {
			via = "via " + r.Gateway.String()
		}
		row(b, "", "route", r.Dst.String(), via)
	}
}

func vmRow(b *strings.Builder, rec *cache.Interface) {
	row(b, "VM NIC", "", kv("mac", rec.MAC), kv("mtu", rec.MTU), joinValid(rec.IPv4, rec.IPv6), kv("gw", rec.Gateway), kv("gw6", rec.GatewayIPv6))
}

func planInterface(b *strings.Builder, vmi *api.VMI, p api.Pair, pod *cache.Progress, rec *cache.Interface) {
	podLinkRow(b, p.PodInterface, pod)
	if rec == nil {
		arrow(b, "")
		row(b, "VM NIC", "", "no phase1 record: the "+p.Binding()+" binding renders from the VMI alone")
		return
	}
	switch p.Binding() {
	case api.BindingBridge:
		if rec.NIC != "" {
			arrow(b, "renamed; the pod IP moves to a dummy "+p.PodInterface+", the VM takes it over")
			row(b, "pod NIC", rec.NIC, "bridge port, MAC learning off")
		}
		arrow(b, "")
		row(b, "bridge", rec.Bridge, kv("dhcp server", rec.ServerIPv4))
		arrow(b, "")
		row(b, "tap", rec.Tap, kv("queues", rec.Queues))
		arrow(b, "")
		vmRow(b, rec)
		if rec.IPAMDisabled {
			row(b, "", "", "no IPv4 on the pod link: layer 2 only, no DHCP")
		}
	case api.BindingMasquerade:
		arrow(b, "NAT: masquerade VM traffic out of "+p.PodInterface+"; "+dnatPorts(vmi, p, pod, rec))
		row(b, "bridge", rec.Bridge, kv("gateway", rec.Gateway), kv("gateway6", rec.GatewayIPv6))
		arrow(b, "")
		row(b, "tap", rec.Tap, kv("queues", rec.Queues))
		arrow(b, "")
		vmRow(b, rec)
	default:
		arrow(b, "")
		row(b, "device", rec.Target, kv("ifindex", rec.Ifindex))
		arrow(b, "")
		vmRow(b, rec)
	}
}

// dnatPorts says what the masquerade NAT forwards to the VM from outside
// the pod: computed by the binding's own PlanNAT and netdriver's rule set,
// the rules phase1 programs (ports, portRanges, Istio's ssh-only DNAT),
// so that the preview cannot say more or less than the kernel does. An
// interface without IPv4 or IPv6 record gives that family nothing.
func dnatPorts(vmi *api.VMI, p api.Pair, pod *cache.Progress, rec *cache.Interface) string {
	var link *cache.Link
	if pod != nil {
		link = pod.Discovered
	}
	if link == nil {
		link = &cache.Link{Name: p.PodInterface}
	}
	in := phase1.InputFor(vmi, p, phase1.Options{})
	var out []string
	for _, f := range []struct {
		family  netdriver.Family
		vm, gw  netip.Addr
		present bool
	}{
		{netdriver.IPv4, rec.IPv4.Addr(), rec.Gateway, rec.IPv4.IsValid()},
		{netdriver.IPv6, rec.IPv6.Addr(), rec.GatewayIPv6, rec.IPv6.IsValid()},
	} {
		if !f.present {
			continue
		}
		nat, err := masquerade.PlanNAT(in, link, f.family, rec.Bridge, f.vm, f.gw)
		if err != nil {
			out = append(out, "DNAT: "+err.Error())
			continue
		}
		rules, err := nat.Rules()
		if err != nil {
			out = append(out, "DNAT: "+err.Error())
			continue
		}
		var fwd []string
		for _, r := range rules {
			if r.Chain != netdriver.NATChainPreInbound || r.Action != netdriver.NATDNAT {
				continue
			}
			if r.Proto == "" {
				fwd = append(fwd, "all ports")
				continue
			}
			runs := make([]string, 0, len(r.DPorts))
			for _, run := range netdriver.PortRuns(r.DPorts) {
				if run.First == run.Last {
					runs = append(runs, fmt.Sprint(run.First))
				} else {
					runs = append(runs, fmt.Sprintf("%d-%d", run.First, run.Last))
				}
			}
			fwd = append(fwd, strings.ToUpper(r.Proto)+" "+strings.Join(runs, ", "))
		}
		if len(fwd) == 0 {
			fwd = []string{"no port"}
		}
		out = append(out, "DNAT "+strings.Join(fwd, ", ")+" → "+f.vm.String())
	}
	if len(out) == 0 {
		return "no DNAT (no VM address)"
	}
	return strings.Join(out, "; ")
}

// joinValid joins the valid prefixes with spaces.
func joinValid(ps ...netip.Prefix) string {
	var out []string
	for _, p := range ps {
		if p.IsValid() {
			out = append(out, p.String())
		}
	}
	return strings.Join(out, " ")
}
