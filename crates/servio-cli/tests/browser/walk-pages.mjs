// Every page a signed-in user reaches, in a real browser at a desktop width (1400 px) and a
// phone's (390 px): no page may scroll sideways, and each is kept as a screenshot.
// Arguments: PLATFORM_URL EMAIL PASSWORD SCREENSHOT_DIR VERIFICATION_FILE (the demo site lists
// the token written there as its manifest's `verification`).
// Prints one line per page and width: `PATH WIDTH STATUS scrollWidth=N`, then what the dashboard
// shows (its first figure, axis labels, range links) and the 404 page's heading; then the site
// page's actions as a user clicks them (collect now, a backfill with its progress until done,
// the zone picked on sign-up from the browser's zone), the account page's forms, the Directory
// (a claim withdrawn; a claim verified, the owner's health page under its five-user threshold), and last the site's
// removal and its return through "Add to my vault"; exits non-zero on any failure.
import { writeFileSync } from 'node:fs';
import { launch } from './launch.mjs';

const [platform, email, password, screenshots, verificationFile] = process.argv.slice(2);
const browser = await launch();
try {
  const signedOut = await browser.newPage({ viewport: { width: 1400, height: 900 }, timezoneId: 'Asia/Tokyo' });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${platform}/signin`);
  const signin = page.locator('form[action="/signin"]');
  await signin.locator('input[name=email]').fill(email);
  await signin.locator('input[name=password]').fill(password);
  await Promise.all([page.waitForURL('**/vault'), signin.locator('button').click()]);
  const site = await page.locator('a[href^="/vault/"]').first().getAttribute('href');

  const paths = ['/dashboard', '/dashboard?range=7', '/dashboard?range=365', '/dashboard/log', '/vault', site,
    '/directory', '/ai', '/account', '/check', '/no/such/page', '/vault/999999'];
  const visits = [...paths.map((path) => [page, path]), [signedOut, '/signin']];
  for (const width of [1400, 390]) {
    for (const [tab, path] of visits) {
      await tab.setViewportSize({ width, height: 900 });
      const response = await tab.goto(`${platform}${path}`);
      const scrollWidth = await tab.evaluate(() => document.documentElement.scrollWidth);
      const name = path.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '') || 'home';
      await tab.screenshot({ path: `${screenshots}/${name}-${width}.png`, fullPage: true });
      console.log(`${path} ${width} ${response.status()} scrollWidth=${scrollWidth}`);
    }
  }

  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto(`${platform}/dashboard`);
  console.log(`figure: ${(await page.locator('.figure').first().textContent()).trim()}`);
  console.log(`axis: ${(await page.locator('svg.chart text.axis').allTextContents()).join(' | ')}`);
  console.log(`titles: ${await page.locator('svg.chart circle title').count()}`);
  console.log(`comparison lines: ${await page.locator('svg.chart polyline.comparison').count()}`);
  console.log(`ranges: ${(await page.locator('nav.ranges a').allTextContents()).join(' | ')}`);
  console.log(`status: ${(await page.locator('p.status').first().textContent()).trim()}`);
  await page.goto(`${platform}/no/such/page`);
  console.log(`404: ${(await page.locator('h1').textContent()).trim()}`);

  // Sign-up picks the browser's zone (this tab's is Asia/Tokyo).
  await signedOut.goto(`${platform}/signin`);
  console.log(`zone detected: ${await signedOut.locator('select[data-detect-zone]').inputValue()}`);

  // Test a manifest: the demo site's, by URL, with its report and dry run, at a phone's width.
  await page.goto(`${platform}${site}`);
  const origin = (await page.locator('main p.muted code').first().textContent()).trim();
  await page.setViewportSize({ width: 390, height: 900 });
  await page.goto(`${platform}/check`);
  await page.locator('#check-url').fill(origin);
  await Promise.all([page.waitForURL('**/check'), page.getByRole('button', { name: 'Check' }).click()]);
  await page.locator('#dry-run').waitFor();
  const checkWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  await page.screenshot({ path: `${screenshots}/check-report-390.png`, fullPage: true });
  console.log(`check: ${(await page.locator('#report h2').textContent()).trim()} rows=${await page.locator('#dry-run tr').count()} scrollWidth=${checkWidth}`);
  await page.setViewportSize({ width: 1400, height: 900 });

  // The site page: collect now, then a backfill of 90 days (the demo holds eight weeks), whose
  // progress the page shows and refreshes by itself until `serve`'s worker is done.
  await page.goto(`${platform}${site}`);
  await Promise.all([page.waitForURL('**done=collected'), page.getByRole('button', { name: 'Collect now' }).click()]);
  console.log(`collect: ${(await page.locator('.notice').textContent()).trim()}`);
  await page.locator('#backfill-days').fill('90');
  await Promise.all([page.waitForURL('**done=backfill'), page.getByRole('button', { name: 'Backfill' }).click()]);
  console.log(`backfill: ${(await page.locator('.progress').textContent()).trim()}`);
  await page.waitForFunction(() => !document.querySelector('.progress'), null, { timeout: 60000, polling: 500 });
  console.log(`backfill done: ${(await page.locator('p.status').textContent()).trim()}`);

  // The account page: a zone saved, a wrong current password said beside its form.
  await page.goto(`${platform}/account`);
  await page.locator('#time-zone-select').selectOption('Europe/Berlin');
  await Promise.all([page.waitForURL('**done=time_zone'), page.getByRole('button', { name: 'Save time zone' }).click()]);
  console.log(`account zone: ${(await page.locator('.notice').textContent()).trim()} | ${await page.locator('#time-zone-select').inputValue()}`);
  await page.locator('#current-password').fill('not the password at all');
  await page.locator('#new-password').fill('a new long password');
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.locator('#password .error').waitFor();
  console.log(`account password: ${(await page.locator('#password .error').textContent()).trim()}`);

  // The Directory: claim the demo site, put the token in its manifest, verify, see the owner's
  // health page (one user: below the threshold, so no figure).
  // First a claim made by mistake, seen pending at both widths, then withdrawn.
  await page.goto(`${platform}/directory`);
  await page.locator('#claim-url').fill('https://mistake.example');
  await Promise.all([page.waitForURL('**/directory'), page.getByRole('button', { name: 'Claim' }).click()]);
  for (const width of [1400, 390]) {
    await page.setViewportSize({ width, height: 900 });
    const claimWidth = await page.evaluate(() => document.documentElement.scrollWidth);
    await page.screenshot({ path: `${screenshots}/directory-claim-${width}.png`, fullPage: true });
    console.log(`/directory#pending-claim ${width} 200 scrollWidth=${claimWidth}`);
  }
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.getByRole('button', { name: 'Withdraw' }).click();
  await page.locator('.notice').waitFor();
  console.log(`withdraw: ${(await page.locator('.notice').textContent()).trim()} | rows=${await page.locator('#claims tr').count()}`);
  await page.locator('#claim-url').fill(origin);
  await Promise.all([page.waitForURL('**/directory'), page.getByRole('button', { name: 'Claim' }).click()]);
  const claimState = (await page.locator('#claims td.warning').first().textContent()).trim();
  writeFileSync(verificationFile, (await page.locator('#claims td code', { hasText: 'wmcp_verify_' }).textContent()).trim());
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.locator('#claims td.ok').waitFor();
  console.log(`claim: ${claimState} -> ${(await page.locator('#claims td.ok').textContent()).trim()} | ${(await page.locator('.notice').textContent()).trim()}`);
  await Promise.all([page.waitForURL('**/health'), page.getByRole('link', { name: 'Collection health' }).click()]);
  await page.screenshot({ path: `${screenshots}/owner-health-1400.png`, fullPage: true });
  console.log(`health: ${(await page.locator('main .card p.muted').first().textContent()).trim()} | tables=${await page.locator('main .card table').count()}`);

  // Last, as it takes the demo's data away: remove the site, after the confirmation; then add
  // it back from the Directory.
  await page.goto(`${platform}${site}`);
  await page.getByText('Remove this site…').click();
  await Promise.all([page.waitForURL('**/vault?removed=1'), page.locator('button.danger').click()]);
  console.log(`removed: ${(await page.locator('.notice').textContent()).trim()}`);
  await page.goto(`${platform}/directory?q=forum`);
  await Promise.all([page.waitForURL('**/vault/*'), page.getByRole('button', { name: 'Add to my vault' }).click()]);
  console.log(`added back: ${(await page.locator('h1').textContent()).trim()}`);
} finally {
  await browser.close();
}
