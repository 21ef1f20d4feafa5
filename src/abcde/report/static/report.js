/* The ABCDE report page: charts, tabs, and each most affected cluster's neighbourhood drawn as
 * split / stable / merge from one member's point of view (paper, Figure 1).
 *
 * Inlined into the page at render time after common.js (the global `abcde`) and, when the page
 * has charts, after vega-embed. The page's data comes from the JSON script elements
 * #report-data and #chart-specs. All item text goes into the page through abcde.el (text nodes
 * and setAttribute), never innerHTML, so hostile attributes stay inert.
 */
(function () {
"use strict";
const {el, byId} = abcde;
const data = JSON.parse(byId('report-data').textContent);
const specs = JSON.parse(byId('chart-specs').textContent);
// A weight in the number style of the Python side (abcde.util.display.weight).
const num = abcde.weight;
// Charts (Vega-Lite via the inlined vega-embed). ast + the bundled interpreter: no eval, so the CSP
// needs no 'unsafe-eval'; vega's default styles come with the page (vega.css), not injected.
window.__charts = 0;
const embedOptions = {actions: false, renderer: 'svg', ast: true, defaultStyle: false,
                      tooltip: {disableDefaultStyle: true}};
for (const [id, spec] of Object.entries(specs)) {
  const target = byId('chart-' + id);
  if (target && window.vegaEmbed) vegaEmbed(target, spec, embedOptions).then(()=>{window.__charts++;}).catch(e=>{target.textContent='chart failed: '+e;});
}
// Tabs.
const tabs = document.querySelectorAll('.tab');
function showTab(k){tabs.forEach(t=>t.classList.toggle('active', t.dataset.tab===k));document.querySelectorAll('.tabpanel').forEach(p=>p.style.display = p.dataset.panel===k ? '' : 'none');fit();}
// Nothing cut at the page's width: a clusters' table wider than its panel is stacked (report.css), and an open
// Figure 1 whose columns cannot hold a member's id puts its groups one under another.
function fit(){
  document.querySelectorAll('.tabpanel').forEach(p=>{
    const t = p.querySelector('table.clusters');
    if (!t || p.offsetParent === null) return;
    t.classList.remove('stacked');
    if (t.scrollWidth > p.clientWidth + 1) t.classList.add('stacked');
  });
  document.querySelectorAll('.fig').forEach(fitFigure);
}
function fitFigure(fig){
  if (fig.offsetParent === null) return;
  fig.classList.remove('rows');
  const cut = [...fig.querySelectorAll('.col')].some(c => {
    const r = c.getBoundingClientRect();
    return c.scrollWidth > c.clientWidth + 1 || [...c.querySelectorAll('.id, h4, .lab')].some(e => e.getBoundingClientRect().right > r.right + 1);
  });
  if (cut) fig.classList.add('rows');
}
window.addEventListener('resize', fit);
if (tabs.length) showTab('interleaved');
tabs.forEach(t=>t.addEventListener('click', ()=>showTab(t.dataset.tab)));
// Cluster neighbourhoods: split / stable / merge from one member's point of view (paper, Figure 1).
// A member: its id (never broken at a hyphen), then each attribute as "name: value" (a missing one as (null)).
function memberLabel(m){
  const parts = [el('span', {class:'id'}, String(m.item_id))];
  for (const [k, v] of Object.entries(m.attributes||{})) {
    const missing = v === null || v === undefined;
    parts.push(' ', el('span', {class:'kv'}, el('span', {class:'k'}, k+':'), ' ',
                       el('span', {class: missing ? 'v null' : 'v'}, missing ? abcde.NULL_TEXT : String(v))));
  }
  return parts;
}
function figure(side, cid, nb, pov){
  const box = el('div', {class:'figwrap'});
  const own = nb.fragments.filter(f=>f.own_frag);
  if (!pov) pov = own[0];
  const B = pov.base_cluster, E = pov.exp_cluster;
  const inB = f => String(f.base_cluster)===String(B), inE = f => String(f.exp_cluster)===String(E);
  const groups = {split: nb.fragments.filter(f=>inB(f)&&!inE(f)), stable: nb.fragments.filter(f=>inB(f)&&inE(f)), merge: nb.fragments.filter(f=>!inB(f)&&inE(f))};
  const exact = {stable: [pov.n, pov.w], split: [pov.nb-pov.n, pov.wb-pov.w], merge: [pov.ne-pov.n, pov.we-pov.w]};
  const fig = el('div', {class:'fig'});
  fig.append(el('div', {class:'bbox'}), el('div', {class:'ebox'}));
  const povItem = nb.members.find(m=>String(m.base_cluster)===String(B)&&String(m.exp_cluster)===String(E));
  // An empty group (e.g. no split part) keeps its place in the picture but takes little room.
  fig.style.gridTemplateColumns = ['split','stable','merge'].map(g => exact[g][0] ? 'minmax(0,3fr)' : 'minmax(7em,1fr)').join(' ');
  for (const g of ['split','stable','merge']) {
    const col = el('div', {class:'col '+g, 'data-group':g});
    col.append(el('h4', {}, g[0].toUpperCase()+g.slice(1)), el('div', {class:'lab', 'data-count':exact[g][0]}, abcde.count(exact[g][0])+' items, weight '+num(exact[g][1])));
    const ul = el('ul');
    let shown = 0;
    for (const f of groups[g]) for (const m of nb.members) {
      if (String(m.base_cluster)!==String(f.base_cluster) || String(m.exp_cluster)!==String(f.exp_cluster)) continue;
      shown++;
      const li = el('li', {title:'weight '+num(m.weight)+' · Base '+m.base_cluster+' · Exp '+m.exp_cluster}, ...memberLabel(m));
      if (povItem && m.item_id===povItem.item_id) li.classList.add('pov');
      if (f.own_frag) li.addEventListener('click', ()=>{const b = figure(side, cid, nb, f); box.replaceWith(b); fitFigure(b.querySelector('.fig'));});
      ul.append(li);
    }
    col.append(ul);
    if (shown < exact[g][0]) col.append(el('div', {class:'lab more'}, '… and '+abcde.count(exact[g][0]-shown)+' more not listed'));
    fig.append(col);
  }
  box.append(el('p', {class:'lab'}, 'Point of view: item ', el('b', {class:'id'}, povItem ? String(povItem.item_id) : '?'), ' — Base(i) = cluster ', el('span', {class:'id'}, String(B)), ' (red), Exp(i) = cluster ', el('span', {class:'id'}, String(E)), ' (blue).'));
  box.append(fig);
  if (nb.fragments_total > nb.fragments_shown) box.append(el('p', {class:'lab'}, 'Showing '+nb.fragments_shown+' of '+nb.fragments_total+' fragments around this cluster.'));
  return box;
}
document.querySelectorAll('tr.cluster').forEach(tr=>tr.addEventListener('click', ()=>{
  const next = tr.nextElementSibling;
  if (next && next.classList.contains('detail')) {next.remove(); tr.classList.remove('open'); return;}
  const nb = ((data.neighbourhoods||{})[tr.dataset.side]||{})[tr.dataset.cluster];
  const td = el('td', {colspan: tr.children.length});
  if (!nb || !nb.fragments.length) td.append('No members recorded.'); else td.append(figure(tr.dataset.side, tr.dataset.cluster, nb, null));
  tr.after(el('tr', {class:'detail'}, td)); tr.classList.add('open');
  const f = td.querySelector('.fig');
  if (f) fitFigure(f);
}));
window.__reportReady = true;
})();
