import { useMemo, useState } from "react";
import { Activity, DollarSign, TrendingDown, TrendingUp, Users } from "lucide-react";
import { Area, AreaChart, CartesianGrid, Legend, Line, LineChart, Tooltip, XAxis, YAxis } from "recharts";
import clsx from "clsx";

type Point = { month: string; revenue: number; visitors: number };

const DATA: Point[] = [
  { month: "Jan", revenue: 4200, visitors: 1200 },
  { month: "Feb", revenue: 3900, visitors: 1350 },
  { month: "Mar", revenue: 5100, visitors: 1610 },
  { month: "Apr", revenue: 6100, visitors: 1720 },
  { month: "May", revenue: 5800, visitors: 1900 },
  { month: "Jun", revenue: 7200, visitors: 2300 },
];

function StatCard({ label, value, delta, icon: Icon }: { label: string; value: string; delta: number; icon: typeof Users }) {
  const up = delta >= 0;
  return (
    <div className="rounded-xl border bg-white p-4 shadow-sm">
      <div className="flex items-center justify-between text-sm text-gray-500">
        <span>{label}</span>
        <Icon className="h-4 w-4" aria-hidden />
      </div>
      <p className="mt-2 text-2xl font-semibold">{value}</p>
      <p className={clsx("mt-1 flex items-center gap-1 text-xs", up ? "text-emerald-600" : "text-rose-600")}>
        {up ? <TrendingUp size={14} /> : <TrendingDown size={14} />}
        {up ? "+" : ""}{delta.toFixed(1)}% from last month
      </p>
    </div>
  );
}

export default function Dashboard() {
  const [metric, setMetric] = useState<"revenue" | "visitors">("revenue");
  const total = useMemo(() => DATA.reduce((sum, p) => sum + p.revenue, 0), []);
  return (
    <main className="min-h-screen bg-gray-50 p-8">
      <h1 className="text-3xl font-bold">Sales overview</h1>
      <section className="mt-6 grid grid-cols-3 gap-4">
        <StatCard label="Revenue" value={`$${total.toLocaleString("en-US")}`} delta={12.4} icon={DollarSign} />
        <StatCard label="Visitors" value="10,080" delta={8.1} icon={Users} />
        <StatCard label="Bounce rate" value="41%" delta={-2.3} icon={Activity} />
      </section>
      <div className="mt-8 rounded-xl border bg-white p-6">
        <div className="mb-4 flex gap-2">
          {(["revenue", "visitors"] as const).map((m) => (
            <button key={m} onClick={() => setMetric(m)}
              className={clsx("rounded px-3 py-1 text-sm", metric === m ? "bg-indigo-600 text-white" : "bg-gray-100")}>
              {m === "revenue" ? "Revenue" : "Visitors"}
            </button>
          ))}
        </div>
        <LineChart width={720} height={280} data={DATA} margin={{ top: 8, right: 16, bottom: 8, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey="month" />
          <YAxis />
          <Tooltip />
          <Legend />
          <Line type="monotone" dataKey={metric} stroke="#4f46e5" strokeWidth={2} dot={false} />
        </LineChart>
        <AreaChart width={720} height={120} data={DATA}>
          <Area type="monotone" dataKey="visitors" stroke="#10b981" fill="#d1fae5" />
        </AreaChart>
      </div>
    </main>
  );
}
