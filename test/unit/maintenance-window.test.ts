import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maintenanceWindowTimes, parseMaintenanceWindow } from '../../src/api/maintenance-window';
import type { MaintenanceWindow } from '../../src/contract/maintenance-window';
import { describeTree } from '../../src/cli/render';
import type { ClusterView } from '../../src/contract/cluster';

const window = (text: string) => parseMaintenanceWindow(text) as MaintenanceWindow;
const at = (iso: string) => Date.parse(iso);

test('a window is days, hours and a time zone; anything else says how to write it', () => {
  assert.deepEqual(window('Mon-Fri,Sun 22:00-02:30 Europe/Berlin'), {
    text: 'Mon-Fri,Sun 22:00-02:30 Europe/Berlin',
    days: [0, 1, 2, 3, 4, 5],
    opensAt: 22 * 3600,
    closesAt: 2.5 * 3600,
    timeZone: 'Europe/Berlin',
  });
  assert.deepEqual(window('Fri-Mon 01:02:03-01:02:33 UTC').days, [0, 1, 5, 6], 'a range through the weekend');
  assert.deepEqual(window('daily 00:00-01:00 UTC').days, [0, 1, 2, 3, 4, 5, 6]);
  assert.match(
    parseMaintenanceWindow('Sat 02:00-04:00') as string,
    /is not a window: write it like "Sat,Sun 02:00-04:00 Europe\/Berlin"/,
  );
  assert.match(parseMaintenanceWindow('Someday 02:00-04:00 UTC') as string, /"Someday" is not a day/);
  assert.match(
    parseMaintenanceWindow('Sat 2am-4am UTC') as string,
    /"2am-4am" is not a span of hours: use HH:MM-HH:MM/,
  );
  assert.match(parseMaintenanceWindow('Sat 24:00-04:00 UTC') as string, /not a span of hours/);
  assert.match(parseMaintenanceWindow('Sat 02:00-02:00 UTC') as string, /opens and closes at the same time/);
  assert.match(parseMaintenanceWindow('Sat 02:00-04:00 Mars/Olympus') as string, /"Mars\/Olympus" is not a time zone/);
});

test('the window open now, or the next to open, in its time zone, summer time included', () => {
  // 2026-11-28 is a Saturday; Berlin is UTC+1 in November and UTC+2 in July.
  const weekend = window('Sat,Sun 02:00-04:00 Europe/Berlin');
  assert.deepEqual(maintenanceWindowTimes(weekend, at('2026-11-27T12:00:00Z')), {
    open: false,
    opensAt: '2026-11-28T01:00:00.000Z',
    closesAt: '2026-11-28T03:00:00.000Z',
  });
  assert.deepEqual(maintenanceWindowTimes(weekend, at('2026-11-28T02:00:00Z')), {
    open: true,
    opensAt: '2026-11-28T01:00:00.000Z',
    closesAt: '2026-11-28T03:00:00.000Z',
  });
  assert.equal(maintenanceWindowTimes(weekend, at('2026-11-28T03:00:00Z')).opensAt, '2026-11-29T01:00:00.000Z');
  assert.equal(maintenanceWindowTimes(weekend, at('2026-07-01T00:00:00Z')).opensAt, '2026-07-04T00:00:00.000Z');
  // Past midnight: Friday's window is still open early on Saturday.
  const late = window('Fri 23:00-01:00 UTC');
  assert.deepEqual(maintenanceWindowTimes(late, at('2026-11-28T00:30:00Z')), {
    open: true,
    opensAt: '2026-11-27T23:00:00.000Z',
    closesAt: '2026-11-28T01:00:00.000Z',
  });
  assert.equal(maintenanceWindowTimes(late, at('2026-11-28T01:00:00Z')).opensAt, '2026-12-04T23:00:00.000Z');
});

test('capt describe cluster shows a window no owner is held for, so an annotation that holds nothing is seen', () => {
  const cluster = {
    name: 'c1',
    phase: 'Provisioned',
    pending: [],
    conditions: [],
    createdAt: '2026-11-27T12:00:00.000Z',
    step: 'reconciled',
    machineDeployments: [],
    machines: [],
    recoveries: [],
    maintenanceWindow: { window: 'Sat 02:00-04:00 UTC', held: [] },
  } as unknown as ClusterView;
  assert.match(
    describeTree(cluster, false),
    /\nScheduled:\n {2}Cluster\/c1: maintenance window Sat 02:00-04:00 UTC; no owner is held for it \(annotate them capt\.cluster\.x-k8s\.io\/rollout-in-maintenance-window: "true"\)/,
  );
});
