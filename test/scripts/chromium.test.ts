import { describe, expect, it } from 'vitest';
import { chooseChromium } from '../../scripts/chromium.js';

describe('which Chromium the report test and the diagram use', () => {
  const debian = (file: string) => file === '/usr/bin/chromium';
  const nothing = () => false;

  it("takes chromium on PATH first: Debian's, as CI installs it", () => {
    expect(chooseChromium({ PATH: '/bin:/usr/bin' }, 'linux-x64', debian)).toEqual({
      use: 'path',
      executable: '/usr/bin/chromium',
    });
  });

  it('takes CHROMIUM_PATH over PATH, and a CHROMIUM_PATH naming nothing is none, not the package', () => {
    const mine = (file: string) => file === '/opt/chrome/chrome' || debian(file);
    expect(
      chooseChromium({ CHROMIUM_PATH: '/opt/chrome/chrome', PATH: '/usr/bin' }, 'linux-x64', mine),
    ).toEqual({
      use: 'path',
      executable: '/opt/chrome/chrome',
    });
    expect(chooseChromium({ CHROMIUM_PATH: '/nonexistent', PATH: '/usr/bin' }, 'linux-x64', debian)).toEqual({
      use: 'none',
    });
  });

  it('falls back to the npm package on Linux x86-64 only, the one build it ships', () => {
    expect(chooseChromium({ PATH: '/usr/bin' }, 'linux-x64', nothing)).toEqual({ use: 'npm package' });
    expect(chooseChromium({ PATH: '/usr/bin' }, 'linux-arm64', nothing)).toEqual({ use: 'none' });
    expect(chooseChromium({ PATH: '/usr/bin' }, 'darwin-x64', nothing)).toEqual({ use: 'none' });
  });
});
